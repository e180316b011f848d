//! `--shard` and `--mpi`: keeping a directory's plan to this process's share (see
//! [`crate::shard`] for the static deal, [`crate::shard::claim`] for the one decided
//! while the run goes on).

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

use super::Engine;
use crate::dest::Destination;
use crate::meta::{Kind, Meta};
use crate::plan::DirPlan;
use crate::shard::claim;
use crate::shard::tree::TreeDeal;
use crate::source::SrcEntry;

/// `--shard`: the deal over the whole tree, made once the roots are listed (`None`
/// inside when the tree is too big to deal whole).
#[derive(Default)]
pub(super) struct Deal(OnceLock<Option<TreeDeal>>);

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
        let deal = self.deal.0.get().and_then(Option::as_ref);
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
            let _ = self.deal.0.set(deal);
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
    pub(super) fn give_new_dir(&self, m: &Meta, parent: &super::DirNode<D>) -> Meta {
        let mut g = self.give_in(m, Some(parent));
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

    /// Whether this process walks directory `name` of `dir`: with `--shard`, only where
    /// the deal gave it something at or below, unless `--delete` (whose extras may be
    /// anywhere) or the deal did not see it.
    pub(super) fn walks(&self, dir: &Path, name: &OsStr) -> bool {
        if self.cfg.delete {
            return true;
        }
        let deal = self.deal.0.get().and_then(Option::as_ref);
        deal.and_then(|d| d.walks(&dir.join(name))).unwrap_or(true)
    }

    /// Keeps the directories this process walks, the other entries of `share`, and
    /// the deletions this share owns: by name with `--shard`, the directory's whole
    /// deletion unit with `--mpi`.
    pub(super) fn keep_share(&self, rel: &Path, plan: &mut DirPlan, share: &HashSet<OsString>) {
        plan.children.retain(|(e, _)| {
            if e.meta.kind == Kind::Dir {
                self.walks(rel, &e.name)
            } else {
                share.contains(&e.name)
            }
        });
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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    use crate::dest::local::LocalDest;
    use crate::report::{Output, Stats};
    use crate::shard::claim::{Claims, Ledger};

    /// Runs the engine on `src` into `dst` taking units from `ledger`.
    fn run(src: &Path, dst: &Path, ledger: &Arc<Ledger>) -> crate::report::Summary {
        let mut cfg = crate::engine::tests::recorder::config(src, false);
        cfg.dest = dst.to_path_buf();
        cfg.claims = Some(Claims(ledger.clone()));
        let dest = LocalDest::new(&cfg.dest, cfg.owners)
            .with_trust(cfg.trust)
            .with_fake_super(cfg.fake_super.dest);
        let out = Output::new(true, 0, 0, false);
        super::super::run(
            &cfg,
            &crate::source::LocalPaths,
            &dest,
            &out,
            Arc::new(Stats::default()),
            Arc::new(AtomicBool::new(false)),
        )
        .unwrap()
    }

    #[test]
    fn once_every_unit_is_taken_no_directory_below_is_walked() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        for d in ["d1", "d2/sub"] {
            std::fs::create_dir_all(src.join(d)).unwrap();
            std::fs::write(src.join(d).join("f"), d).unwrap();
        }
        std::fs::write(src.join("top"), "top").unwrap();

        // Nobody has walked the tree: this run takes and copies everything.
        let fresh = Arc::new(Ledger::default());
        let s = run(&src, &tmp.path().join("a"), &fresh);
        assert_eq!((s.files_copied, s.dirs_not_walked), (3, 0), "{s:?}");

        // Another process has walked it all: only the top level's own units are
        // asked for, and the directories below are left to their takers.
        let walked = Arc::new(Ledger::default());
        walked.walked();
        let dst = tmp.path().join("b");
        let s = run(&src, &dst, &walked);
        assert_eq!((s.files_copied, s.dirs_not_walked), (1, 2), "{s:?}");
        assert!(dst.join("top").exists());
        assert!(!dst.join("d1/f").exists());
    }
}
