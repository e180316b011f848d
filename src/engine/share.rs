//! `--shard` and `--mpi`: keeping a directory's plan to this process's share (see
//! [`crate::shard`] for the static deal, [`crate::shard::claim`] for the one decided
//! while the run goes on).

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::Engine;
use crate::dest::Destination;
use crate::meta::{Kind, Meta};
use crate::plan::DirPlan;
use crate::shard::claim;
use crate::shard::tree::TreeDeal;
use crate::walk::SrcEntry;

impl<D: Destination> Engine<'_, D> {
    /// The names of `entries` (the source listing of `dir`, below DEST) that are not
    /// directories and are this process's to bring over; `None` without `--shard`.
    pub(super) fn share_of(&self, dir: &Path, entries: &[SrcEntry]) -> Option<HashSet<OsString>> {
        if let Some(claims) = &self.cfg.claims {
            let view: Vec<(&[u8], &Meta)> = entries
                .iter()
                .map(|e| (e.name.as_bytes(), &e.meta))
                .collect();
            let got = claim::claimed(claims, dir, &view, self.cfg.hard_links);
            return Some(
                got.into_iter()
                    .map(|n| OsStr::from_bytes(n).to_owned())
                    .collect(),
            );
        }
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
        self.shared()
            && dir.is_some_and(
                |d| matches!(self.dest.stat(d, name), Ok(Some(m)) if m.kind == Kind::Dir),
            )
    }

    /// A new directory's attributes at creation: a shard makes it writable for its
    /// owner whatever the source's mode, so the other shards can still write into it
    /// (the finalize run gives the source's mode).
    pub(super) fn give_new_dir(&self, m: &Meta) -> Meta {
        let mut g = self.give(m);
        if self.shared() {
            g.mode |= 0o700;
        }
        g
    }

    /// Whether other processes write into the same tree at the same time (`--shard`,
    /// `--mpi`): then directory attributes are left to the finalize run.
    pub(super) fn shared(&self) -> bool {
        self.cfg.shard.is_some() || self.cfg.claims.is_some()
    }

    /// Keeps the directories (every share walks them), the other entries of `share`,
    /// and the deletions this share owns: by name with `--shard`, the directory's
    /// whole deletion unit with `--mpi`.
    pub(super) fn keep_share(&self, rel: &Path, plan: &mut DirPlan, share: &HashSet<OsString>) {
        plan.children
            .retain(|(e, _)| e.meta.kind == Kind::Dir || share.contains(&e.name));
        if let Some(claims) = &self.cfg.claims {
            if !plan.deletions.is_empty() && claims.claim(&[claim::deletions(rel)]) != [true] {
                plan.deletions.clear();
            }
        } else if let Some(shard) = self.cfg.shard {
            plan.deletions
                .retain(|(name, _)| shard.owns_absent(&rel.join(name)));
        }
    }
}
