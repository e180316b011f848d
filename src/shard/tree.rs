//! The deal over the whole tree: before copying, every shard lists the whole source
//! once (the same listing on every machine) and deals its entries as one list —
//! largest cost first, each to the share with the least cost so far, ties to the
//! lowest share, the order fixed by (cost, path bytes) — so one large file is
//! balanced by many small ones in other directories, which a per-directory deal
//! cannot do (the rig's node_modules corpus has a 6 MB bundle in a 36 MB tree).
//!
//! An entry's cost is its share of the tree's files plus its share of the tree's
//! bytes (`1/F + size/B`, computed as `B + size·F`): shares end up alike in both,
//! the one holding a large file taking fewer small ones.
//!
//! It costs one sequential walk of the source before the copy (local `readdir` and
//! `lstat`s: fast beside the copy's network round trips) and memory for every entry
//! while dealing. Past [`MAX_ENTRIES`] the deal is given up and each directory is dealt
//! on its own ([`super::Shard::mine`]); so are entries that appear after the deal.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use super::Shard;
use crate::meta::Kind;
use crate::walk::{self, SrcEntry};

/// The most entries dealt as one list (memory: about 100 bytes each while dealing).
pub const MAX_ENTRIES: usize = 4_000_000;

/// Whether each non-directory entry of the tree is this share's, by directory below
/// DEST and name.
#[derive(Debug, Default)]
pub struct TreeDeal {
    dirs: HashMap<PathBuf, HashMap<OsString, bool>>,
}

impl TreeDeal {
    /// Lists the tree under `top` (the children of DEST itself, as the run copies
    /// them) and deals it; `None` past [`MAX_ENTRIES`]. Unreadable directories are
    /// left out (the copy reports them).
    pub fn build(shard: Shard, top: &[SrcEntry], hard_links: bool) -> Option<TreeDeal> {
        let mut all: Vec<(u64, Vec<u8>, PathBuf, OsString)> = Vec::new();
        let mut stack: Vec<(PathBuf, Vec<SrcEntry>)> = vec![(PathBuf::new(), top.to_vec())];
        while let Some((rel, entries)) = stack.pop() {
            for e in entries {
                if e.meta.kind == Kind::Dir {
                    if let Ok((children, _)) = walk::list_dir(&e.path) {
                        stack.push((rel.join(&e.name), children));
                    }
                    continue;
                }
                if hard_links && e.meta.kind == Kind::File && e.meta.nlink > 1 {
                    continue;
                }
                let size = if e.meta.kind == Kind::File {
                    e.meta.size
                } else {
                    0
                };
                let key = rel.join(&e.name).into_os_string().into_vec();
                all.push((size, key, rel.clone(), e.name));
                if all.len() > MAX_ENTRIES {
                    return None;
                }
            }
        }
        all.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let files = all.len() as u128;
        // Every entry counts one byte at least, so an empty tree divides by nothing.
        let bytes = all.iter().map(|e| u128::from(e.0)).sum::<u128>().max(1);
        let mut heap: BinaryHeap<Reverse<(u128, u64)>> =
            (0..shard.count).map(|k| Reverse((0, k))).collect();
        let mut deal = TreeDeal::default();
        for (size, _, dir, name) in all {
            let Reverse((load, k)) = heap.pop().expect("one share at least");
            heap.push(Reverse((load + bytes + u128::from(size) * files, k)));
            deal.dirs
                .entry(dir)
                .or_default()
                .insert(name, k == shard.index);
        }
        Some(deal)
    }

    /// Whether `name` in `dir` is this share's; `None` when the deal did not see it.
    pub fn lookup(&self, dir: &Path, name: &OsStr) -> Option<bool> {
        self.dirs.get(dir)?.get(name).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::Meta;

    fn file(name: &str, size: u64) -> SrcEntry {
        SrcEntry {
            name: name.into(),
            path: PathBuf::from("/nonexistent").join(name),
            meta: Meta::of(Kind::File, size),
        }
    }

    #[test]
    fn one_large_file_is_balanced_by_fewer_small_ones() {
        // A 6 MB bundle in a 36 MB tree of 8,000 files, like the rig's node_modules.
        let mut top = vec![file("bundle.js", 6_000_000)];
        top.extend((0..8000).map(|i| file(&format!("f{i}"), 1000 + (i * 7919) % 6500)));
        let (files, bytes) = (
            top.len() as f64,
            top.iter().map(|e| e.meta.size).sum::<u64>(),
        );
        let mut owners = vec![0; top.len()];
        for k in 0..4 {
            let deal = TreeDeal::build(Shard { index: k, count: 4 }, &top, false).unwrap();
            let mine: Vec<&SrcEntry> = top
                .iter()
                .filter(|e| deal.lookup(Path::new(""), &e.name).unwrap())
                .collect();
            for (i, e) in top.iter().enumerate() {
                owners[i] += usize::from(deal.lookup(Path::new(""), &e.name).unwrap());
            }
            let b = mine.iter().map(|e| e.meta.size).sum::<u64>() as f64;
            let f = mine.len() as f64;
            assert!(
                (b / (bytes as f64 / 4.0) - 1.0).abs() < 0.2,
                "share {k}: {b} bytes"
            );
            assert!(
                (f / (files / 4.0) - 1.0).abs() < 0.2,
                "share {k}: {f} files"
            );
        }
        assert!(owners.iter().all(|&n| n == 1));
    }
}
