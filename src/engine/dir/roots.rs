//! Planning the roots: what the command line's sources and DEST name, and the first
//! work queued from them.
//!
//! Kept apart from the per-directory scan because it runs once, on the calling thread,
//! and holds rsync's operand rules (trailing slashes, one file onto a new name,
//! duplicate names) that no directory below the top needs.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Listed;
use crate::dest::{self, Destination, RootState};
use crate::engine::{DestKnown, Engine, EntryJob, Origin, root_is_dir};
use crate::exit::Error;
use crate::meta::{Kind, Meta};
use crate::report::itemize::{Itemize, Update};
use crate::report::{Escaped, Stats};
use crate::source::SrcEntry;

/// A source operand after applying rsync's trailing-slash rule.
struct Operand {
    /// The entry the walk starts from: the directory itself with `contents`.
    entry: SrcEntry,
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
    /// DEST cannot be looked at or created: exit 3, unless the destination is gone.
    fn unusable_dest(&self, e: dest::Error) -> Error {
        match e {
            dest::Error::Entry(source) => Error::Select {
                path: self.cfg.dest.clone(),
                source,
            },
            e => Error::Dest {
                path: self.cfg.dest.clone(),
                source: e,
            },
        }
    }

    /// Resolves sources and DEST, then queues the first work.
    pub(in crate::engine) fn plan_roots(&self) -> Result<(), Error> {
        let mut operands = Vec::new();
        // -R and --files-from names go into one tree, walked beside the operands.
        let (named, listed) = self.named_paths();
        let given = self.cfg.sources.iter().filter(|src| {
            self.cfg.paths.files_from.is_none()
                && (!self.cfg.paths.relative
                    || crate::options::relative::is_anchor_only(&self.source.path_of(src)))
        });
        for given in given.chain(&listed) {
            let src = &self.source.path_of(given);
            let contents = names_contents(src);
            // `SRC/` names the directory a symlink points to; `SRC` the link itself.
            let entry = self
                .source
                .operand(given, contents)
                .and_then(|mut e| {
                    if self.cfg.fake_super.source {
                        crate::source::read_faked(&mut e)?;
                    }
                    Ok(e)
                })
                .map_err(|source| Error::Select {
                    path: src.clone(),
                    source,
                })?;
            // A source named twice is copied once (rsync drops duplicate names).
            if operands
                .iter()
                .any(|o: &Operand| o.entry.path == *src && o.contents == contents)
            {
                continue;
            }
            operands.push(Operand {
                contents: contents && entry.meta.kind == Kind::Dir,
                meta: entry.meta,
                entry,
            });
        }
        let state = self.dest.root_state().map_err(|e| self.unusable_dest(e))?;
        let dest_slash = has_trailing_slash(&self.cfg.dest);

        // One non-directory source onto a DEST that is not a directory: DEST is the
        // new name of that file, as with cp and rsync.
        if operands.len() == 1
            && named.is_none()
            && operands[0].meta.kind != Kind::Dir
            && !self.follows_to_dir(&operands[0].entry.path, &operands[0].meta)
            && !root_is_dir(&state)
            && !dest_slash
        {
            let op = operands.pop().unwrap();
            // --mkpath: DEST's missing parents are made first (in a dry run, said).
            let missing = match self.cfg.mkpath {
                true => self.dest.missing_parents(false),
                false => 0,
            };
            if missing > 0 {
                let parent = self.dest_display.parent().unwrap_or(Path::new("."));
                self.out.created_dirs(missing, parent);
                if !self.cfg.dry_run {
                    self.dest
                        .make_parents()
                        .map_err(|e| self.unusable_dest(e))?;
                }
            }
            let (dir, name) = match (missing > 0 && self.cfg.dry_run, self.cfg.dest.file_name()) {
                (true, Some(name)) => (None, name.to_owned()),
                _ => {
                    let (d, n) = self.dest.root_parent().map_err(|e| self.unusable_dest(e))?;
                    (Some(d), n)
                }
            };
            let node = self.new_node(
                PathBuf::new(),
                dir,
                (None, None),
                Origin::Imagined,
                None,
                (Default::default(), None),
            );
            let known = match state {
                RootState::Missing => DestKnown::Missing,
                RootState::Exists(m) => DestKnown::Present(m),
            };
            // (A remote operand's entry is held by a directory that opens it
            // whatever name it is given.)
            // Its line shows the source's name, as rsync's does (messages, DEST's).
            self.out
                .show_as(Path::new(&name), Path::new(&op.entry.name));
            let mut entries = vec![SrcEntry { name, ..op.entry }];
            // -L and friends, --chmod, --chown: as for any other entry.
            self.shape_entries(None, Path::new(""), &mut entries);
            if self
                .share_of(Path::new(""), &entries)
                .is_some_and(|share| share.is_empty())
            {
                return Ok(());
            }
            if let Some(entry) = entries.pop() {
                self.out
                    .listed(Path::new(""), Vec::new(), vec![entry.name.clone()]);
                self.stats.files_scanned.fetch_add(1, Ordering::Relaxed);
                self.stats.found(&entry.meta);
                self.sched.push(
                    vec![],
                    VecDeque::from([EntryJob {
                        parent: node.clone(),
                        entry,
                        known,
                    }]),
                );
            }
            return Ok(());
        }

        // --mkpath: DEST and its missing parents are made before the transfer, which
        // then finds DEST there (rsync's `created N directories for DEST`).
        let state = match (&state, self.cfg.mkpath) {
            (RootState::Missing, true) => {
                let missing = self.dest.missing_parents(true);
                if missing > 0 {
                    self.out.created_dirs(missing, &self.dest_display);
                }
                match self.cfg.dry_run {
                    true => state,
                    false => {
                        self.dest.root_dir().map_err(|e| self.unusable_dest(e))?;
                        self.dest.root_state().map_err(|e| self.unusable_dest(e))?
                    }
                }
            }
            _ => state,
        };
        if let RootState::Exists(m) = &state
            && m.kind != Kind::Dir
        {
            return Err(Error::Unusable {
                path: self.cfg.dest.clone(),
                why: "destination exists and is not a directory".into(),
            });
        }
        let fresh = matches!(state, RootState::Missing);
        let dir = if self.cfg.dry_run && fresh {
            None
        } else {
            Some(self.dest.root_dir().map_err(|e| self.unusable_dest(e))?)
        };
        if fresh {
            Stats::bump(&self.stats.dirs_created);
            self.out.created_dest(&self.dest_display);
            let first_dir = operands.iter().find(|o| o.contents);
            let code = match first_dir {
                Some(o) => Some(self.new_dir_code(Path::new(""), &o.meta)),
                None => Some(Itemize::New(Update::Local, Kind::Dir)),
            };
            if let (Some(code), Some(op)) = (code, first_dir.or(operands.first())) {
                // rsync's line for the transfer's top directory, made from scratch.
                let meta = Meta {
                    kind: Kind::Dir,
                    ..op.meta
                };
                let path = op.entry.path.join(".");
                let src = crate::report::Source {
                    meta: &meta,
                    path: &path,
                };
                self.out.change(code, Path::new("./"), src);
            }
        }
        // DEST takes the attributes of the first `SRC/` (rsync keeps the first of the
        // `.`s sent); with none it keeps its own.
        let only_contents = named.is_none() && operands.iter().all(|o| o.contents);
        let only_names = operands.iter().all(|o| !o.contents);
        // (-R and --files-from names beside it too: rsync sends its `.` with them.)
        let first_dir = operands.iter().position(|o| o.contents);
        let lone = first_dir.is_some();
        let first = first_dir.unwrap_or(0);
        // A -R path whose part to recreate starts with `./` gives DEST the attributes
        // of the directory that `.` is, as rsync sends that `.` as an implied directory.
        let dot = (!lone).then(|| self.implied_dot()).flatten();
        let root_src = match &dot {
            Some(d) => Some(d.path.clone()),
            None => lone.then(|| operands[first].entry.path.clone()),
        };
        let root_meta = match &dot {
            Some(d) => Some(self.shape_meta(d.meta)),
            None => lone.then(|| self.shape_meta(operands[first].meta)),
        };
        if let (true, Some(d), Some(meta)) = (fresh, &dot, &root_meta) {
            let code = self.new_dir_code(Path::new(""), &d.meta);
            let path = d.path.join(".");
            let src = crate::report::Source { meta, path: &path };
            self.out.change(code, Path::new("./"), src);
        }
        // DEST as it is now: one `root_dir` just made is finalized like one that was
        // there (its backend made it with parents and a default mode).
        let now = match (&state, &dir) {
            (RootState::Missing, None) => None,
            (RootState::Exists(m), _) if only_names => Some(*m),
            _ => match self.dest.root_state() {
                Ok(RootState::Exists(m)) => Some(m),
                Ok(RootState::Missing) => None,
                Err(e) => return Err(self.unusable_dest(e)),
            },
        };
        if (!only_names || dot.is_some())
            && let Some(m) = &now
        {
            self.note_written_root(m);
        }
        let origin = match now {
            Some(m) => Origin::Found(m),
            None => Origin::Imagined,
        };
        if let (RootState::Exists(found), Some(meta), Some(root)) = (&state, &root_meta, &root_src)
        {
            let path = root.join(".");
            let src = crate::report::Source { meta, path: &path };
            self.itemize_dir(Path::new("./"), src, found);
        }
        let filters = self.root_filters(&operands);
        let node = self.new_node(
            PathBuf::new(),
            dir,
            (root_meta, root_src),
            origin,
            None,
            (filters, named),
        );

        let mut entries = Vec::new();
        let mut listing_ok = true;
        let mut merged = node.merged.lock().unwrap();
        for op in operands {
            // -d: a directory named is created, `SRC/`'s top level sent.
            if op.meta.kind == Kind::Dir && !self.cfg.recursive && !self.cfg.paths.dirs {
                let name = if op.contents {
                    Path::new(".")
                } else {
                    Path::new(op.entry.path.file_name().unwrap_or_default())
                };
                self.out
                    .info(format_args!("skipping directory {}", Escaped(name)));
                continue;
            }
            if op.contents {
                Stats::bump(&self.stats.dirs_scanned);
                let _listed = Listed(&self.stats);
                match self.list_source(&op.entry) {
                    Some((list, whole)) => {
                        listing_ok &= whole;
                        super::merge_listing(&mut entries, list, &mut merged)
                    }
                    None => listing_ok = false,
                }
            } else {
                let name = op
                    .entry
                    .path
                    .file_name()
                    .map(|n| n.to_owned())
                    .ok_or_else(|| Error::Unusable {
                        path: op.entry.path.clone(),
                        why: "cannot copy a path with no name".into(),
                    })?;
                let one = vec![SrcEntry { name, ..op.entry }];
                super::merge_listing(&mut entries, one, &mut merged);
            }
        }
        drop(merged);
        if let Some(t) = &node.implied {
            entries.extend(self.implied_entries(t));
        }
        // Several sources giving one name: the first one's entry is copied, as rsync's
        // file list keeps the first of duplicate names.
        let mut seen = std::collections::HashSet::new();
        entries.retain(|e| seen.insert(e.name.clone()));
        // Deleting at DEST's top level only makes sense when DEST mirrors `SRC/`.
        let whole = listing_ok || self.cfg.ignore_errors;
        self.deal_tree(&entries);
        self.plan_children(&node, entries, fresh, whole && only_contents);
        Ok(())
    }

    /// The `.` of the first `-R` operand whose part to recreate starts with `./`
    /// (`./a/b`, `src/././a`), as rsync's implied `.`; `None` without one, or when it
    /// cannot be read (its names are still sent).
    fn implied_dot(&self) -> Option<SrcEntry> {
        if !self.cfg.paths.relative || self.cfg.paths.files_from.is_some() {
            return None;
        }
        self.cfg.sources.iter().find_map(|src| {
            let (base, rel) = crate::options::relative::split_anchor(&self.source.path_of(src));
            let b = rel.as_os_str().as_encoded_bytes();
            let dotted = b.len() > 2 && b.starts_with(b"./");
            dotted
                .then(|| self.source.operand(&base.join("."), true).ok())
                .flatten()
                .filter(|e| e.meta.kind == Kind::Dir)
        })
    }

    /// The filter scope of DEST's top: the first source's (rsync reads the parents'
    /// `dir-merge /NAME` files for its first transfer directory).
    fn root_filters(&self, operands: &[Operand]) -> Arc<crate::options::filter::Scope> {
        let Some(op) = operands.first() else {
            return Default::default();
        };
        let transfer = match op.contents {
            true => op.entry.path.as_path(),
            false => op.entry.path.parent().unwrap_or(Path::new(".")),
        };
        let transfer = if transfer.as_os_str().is_empty() {
            Path::new(".")
        } else {
            transfer
        };
        let first_dir = (op.meta.kind == Kind::Dir).then_some(&op.entry);
        let (scope, errors) = self.cfg.filter.root_scope(transfer, first_dir, op.contents);
        self.filter_errors(&op.entry.path, errors);
        scope
    }
}
