//! Removing what the destination has and the source lacks (`--delete`), or what is in
//! the way of an entry of another type. Every removed entry — each one inside a removed
//! tree too — is itemized and counted, and `--max-delete` stops removals part-way, as
//! rsync's does: a safety net for a source that came up empty (a failed mount).

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{DirNode, Engine};
use crate::dest::{self, DestEntry, Destination, Removal};
use crate::meta::Kind;
use crate::report::Stats;

/// Whether a removal counts against `--max-delete`: a user's entries do; a leftover
/// temporary of a killed run (ours, never the user's data) does not.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Budget {
    Counted,
    Free,
}

/// Deletions `--max-delete` still allows.
pub(super) struct MaxDelete(AtomicU64);

impl MaxDelete {
    pub(super) fn new(max: Option<u64>) -> Self {
        MaxDelete(AtomicU64::new(max.unwrap_or(u64::MAX)))
    }
}

/// The engine's side of one removal: the budget, the counters, the itemized lines.
struct Deleter<'a, 'e, D: Destination> {
    engine: &'a Engine<'e, D>,
    /// The removed entry's parent, relative to DEST.
    base: &'a Path,
    budget: Budget,
    /// `--delete`'s per-directory filter rules: what the receiver's rules protect
    /// inside a removed directory stays (with the directories above it).
    protect: Option<&'a crate::options::filter::Scope>,
    /// Making room for an entry of another type: the entry in the way is neither
    /// itemized, counted nor limited by `--max-delete` (rsync's `DEL_MAKE_ROOM`: a
    /// script counting `*deleting` lines counts what the source lacks), what is inside
    /// it is.
    making_room: bool,
}

impl<D: Destination> Deleter<'_, '_, D> {
    /// Whether `rel` is the entry being made room for itself.
    fn is_in_the_way(&self, rel: &Path) -> bool {
        self.making_room && rel.components().nth(1).is_none()
    }
}

impl<D: Destination> Removal for Deleter<'_, '_, D> {
    fn may_remove(&self, rel: &Path, kind: Kind) -> bool {
        if let Some(scope) = self.protect
            && rel.components().nth(1).is_some()
        {
            let top = self.base.join(rel.components().next().unwrap());
            let filter = &self.engine.cfg.filter;
            if filter.protected_in_deletion(scope, &top, &self.base.join(rel), kind == Kind::Dir) {
                return false;
            }
        }
        self.budget == Budget::Free || self.is_in_the_way(rel) || self.engine.take_delete()
    }

    fn removed(&self, rel: &Path, kind: Kind) {
        if self.is_in_the_way(rel) {
            return;
        }
        Stats::bump(&self.engine.stats.files_deleted);
        self.engine.out.deletion(&self.base.join(rel), kind);
    }
}

impl<D: Destination> Engine<'_, D> {
    /// One deletion from the `--max-delete` budget; `false` (and one more skipped
    /// deletion counted) once it is spent.
    fn take_delete(&self) -> bool {
        let ok = self
            .delete_budget
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok();
        if !ok {
            Stats::bump(&self.stats.deletes_skipped);
        }
        ok
    }

    /// Whether `--max-delete` allows any more deletions.
    pub(super) fn may_delete_more(&self) -> bool {
        self.delete_budget.0.load(Ordering::Relaxed) > 0
    }

    /// Removes `name` of kind `kind` from `dir` (`at`, below DEST) to make room for an
    /// entry of another type, a directory with everything in it. Returns whether it is gone (`false`: `--max-delete` kept it or
    /// part of it). A dry run itemizes and counts the same entries and removes nothing.
    pub(super) fn delete(
        &self,
        dir: Option<&D::Dir>,
        name: &OsStr,
        at: &DirNode<D>,
        kind: Kind,
        budget: Budget,
    ) -> dest::Result<bool> {
        let each = Deleter {
            engine: self,
            base: &at.rel,
            budget,
            protect: None,
            making_room: true,
        };
        self.delete_with(dir, name, at, kind, &each)
    }

    /// A `--delete` removal from `node`: as [`Engine::delete`], keeping what the
    /// receiver's filter rules protect inside a removed directory.
    pub(super) fn delete_in(
        &self,
        node: &super::DirNode<D>,
        name: &OsStr,
        kind: Kind,
        budget: Budget,
    ) -> dest::Result<bool> {
        let each = Deleter {
            engine: self,
            base: &node.rel,
            budget,
            protect: (!self.cfg.filter.is_empty()).then_some(&*node.filters),
            making_room: false,
        };
        self.delete_with(node.dir.as_ref(), name, node, kind, &each)
    }

    fn delete_with(
        &self,
        dir: Option<&D::Dir>,
        name: &OsStr,
        at: &DirNode<D>,
        kind: Kind,
        each: &Deleter<'_, '_, D>,
    ) -> dest::Result<bool> {
        let rel = Path::new(name);
        match (self.cfg.dry_run, dir) {
            (false, Some(dir)) if self.cfg.backup.is_some() && each.budget == Budget::Counted => {
                self.back_up_deleted(dir, (at, &at.rel), (name, rel, kind), each)
            }
            (false, Some(dir)) if kind == Kind::Dir => self.dest.remove_tree(dir, name, each),
            (false, Some(dir)) => {
                if !each.may_remove(rel, kind) {
                    return Ok(false);
                }
                match self.dest.remove(dir, name, kind) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
                    Err(e) => return Err(e),
                }
                each.removed(rel, kind);
                Ok(true)
            }
            (_, dir) => self.pretend_delete(dir, name, rel, kind, each),
        }
    }

    /// `--dry-run`: walks what would be removed, through the same seam, deepest first.
    fn pretend_delete(
        &self,
        dir: Option<&D::Dir>,
        name: &OsStr,
        rel: &Path,
        kind: Kind,
        each: &Deleter<'_, '_, D>,
    ) -> dest::Result<bool> {
        let mut all = true;
        if kind == Kind::Dir
            && let Some(dir) = dir
        {
            let (sub, children) = self.listing_by_name(dir, name)?;
            for c in children {
                let Some(ckind) = self.kind_of(&sub, &c)? else {
                    continue;
                };
                all &= self.pretend_delete(Some(&sub), &c.name, &rel.join(&c.name), ckind, each)?;
            }
        }
        if all && each.may_remove(rel, kind) {
            each.removed(rel, kind);
            return Ok(true);
        }
        Ok(false)
    }

    /// Opens directory `name` of `dir` and lists its children in name order: the walk
    /// of what a removal takes, deepest first.
    pub(super) fn listing_by_name(
        &self,
        dir: &D::Dir,
        name: &OsStr,
    ) -> dest::Result<(D::Dir, Vec<DestEntry>)> {
        let (sub, _) = self.dest.open_dir(dir, name)?;
        let mut children = self.dest.list(&sub)?;
        children.sort_by(|a, b| a.name.cmp(&b.name));
        Ok((sub, children))
    }

    /// The kind of child `c` of `sub`, asked for where the listing lacks it; `None` if
    /// it is gone meanwhile.
    pub(super) fn kind_of(&self, sub: &D::Dir, c: &DestEntry) -> dest::Result<Option<Kind>> {
        match c.kind.or(c.meta.map(|m| m.kind)) {
            Some(k) => Ok(Some(k)),
            None => Ok(self.dest.stat(sub, &c.name)?.map(|m| m.kind)),
        }
    }
}
