//! `--shard`: keeping a directory's plan to this process's share (see [`crate::shard`]).

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::Engine;
use crate::dest::Destination;
use crate::meta::{Kind, Meta};
use crate::plan::DirPlan;
use crate::shard::Shard;
use crate::shard::tree::TreeDeal;
use crate::walk::SrcEntry;

impl<D: Destination> Engine<'_, D> {
    /// The names of `entries` (the source listing of `dir`, below DEST) that are not
    /// directories and are this process's to bring over; `None` without `--shard`.
    pub(super) fn share_of(&self, dir: &Path, entries: &[SrcEntry]) -> Option<HashSet<OsString>> {
        let shard = self.cfg.shard?;
        let deal = self.deal.get().and_then(Option::as_ref);
        let mut share = HashSet::new();
        // What the tree's deal did not see is dealt within its directory.
        let mut rest = Vec::new();
        for e in entries.iter().filter(|e| e.meta.kind != Kind::Dir) {
            match deal.and_then(|d| d.lookup(dir, &e.name)) {
                Some(true) => {
                    share.insert(e.name.clone());
                }
                Some(false) => {}
                None => rest.push(e),
            }
        }
        let view: Vec<(&[u8], &Meta)> = rest.iter().map(|e| (e.name.as_bytes(), &e.meta)).collect();
        let mine = shard.mine(dir, &view, self.cfg.hard_links);
        share.extend(
            rest.iter()
                .zip(mine)
                .filter(|(_, m)| *m)
                .map(|(e, _)| e.name.clone()),
        );
        Some(share)
    }

    /// Deals the whole tree under DEST's children `top` before the copy (see
    /// [`crate::shard::tree`]).
    pub(super) fn deal_tree(&self, top: &[SrcEntry]) {
        if let Some(shard) = self.cfg.shard.filter(|_| self.cfg.recursive) {
            let deal = TreeDeal::build(shard, top, self.cfg.hard_links);
            if deal.is_none() {
                self.out.verbose(
                    1,
                    format_args!(
                        "--shard: more than {} entries: each directory is dealt on its own",
                        crate::shard::tree::MAX_ENTRIES
                    ),
                );
            }
            let _ = self.deal.set(deal);
        }
    }

    /// Whether `name` in `dir`, which this shard failed to remove from the way of a
    /// directory, is a directory now: every shard walks every directory, so all of
    /// them try to replace what is in its way, and all but one find it done.
    pub(super) fn replaced_by_another_shard(&self, dir: Option<&D::Dir>, name: &OsStr) -> bool {
        self.cfg.shard.is_some()
            && dir.is_some_and(
                |d| matches!(self.dest.stat(d, name), Ok(Some(m)) if m.kind == Kind::Dir),
            )
    }

    /// A new directory's attributes at creation: a shard makes it writable for its
    /// owner whatever the source's mode, so the other shards can still write into it
    /// (the finalize run gives the source's mode).
    pub(super) fn give_new_dir(&self, m: &Meta) -> Meta {
        let mut g = self.give(m);
        if self.cfg.shard.is_some() {
            g.mode |= 0o700;
        }
        g
    }
}

/// Keeps the directories (every share walks them), the other entries of `share`, and
/// the deletions of names this share owns.
pub(super) fn keep_share(rel: &Path, plan: &mut DirPlan, share: &HashSet<OsString>, shard: Shard) {
    plan.children
        .retain(|(e, _)| e.meta.kind == Kind::Dir || share.contains(&e.name));
    plan.deletions
        .retain(|(name, _)| shard.owns_absent(&rel.join(name)));
}
