//! Shares of one tree for several processes (`--shard K/N`): which entries this
//! process copies, updates and deletes.
//!
//! The entries that are not directories are dealt the same way in every process on
//! every machine, from the source listing alone, so no process talks to another. First
//! the whole tree is dealt in pieces ([`tree`]: small subtrees whole, each share alike
//! in files and in bytes); a process walks only the directories with some of its
//! entries at or below, and creates them if no other process got there first. Past
//! `tree::MAX_ENTRIES` entries, and for entries and directories that appear after
//! that deal, each directory is dealt on its own ([`Shard::mine`]) and every process
//! walks it; with `--delete` every process walks every directory (what it removes
//! may be anywhere):
//!
//! 1. Each entry costs its size in bytes plus [`ENTRY_COST`] (regular files; others
//!    cost `ENTRY_COST` alone): a file's fixed cost — its create, attribute and close
//!    round trips — counts as much as sending 64 KiB, so tiny files are dealt like
//!    cards (balancing the file count) and large ones by their bytes.
//! 2. Entries are taken in order of cost, largest first, then by name bytes, and each
//!    goes to the share with the least cost so far (largest-first greedy), ties going
//!    to the share that comes first counting from the directory's *offset*.
//! 3. The offset is FNV-1a 64 of the directory's path below DEST (its bytes, no leading
//!    or trailing `/`; DEST itself is the empty path), modulo N: small directories
//!    start at different shares, so a tree of small directories spreads evenly.
//!
//! Names the destination holds and the source lacks (what `--delete` removes) belong
//! to one share by FNV-1a 64 of their path below DEST, modulo N: exactly one process
//! removes each, and no process removes a name that is in the source, which is what
//! every other process copies. With `-H`, files with several links belong to no
//! share: their links can be made only by one process that sees all of them, the
//! finalize run.
//!
//! Directory attributes (mode, owner, mtime) are set by nobody while shards run: no
//! shard knows when the others are done with a directory, and a read-only mode set
//! early would keep them out. The finalize run — the same command without `--shard` —
//! sets them, copying nothing the shards copied (it compares size and mtime only; it
//! reads no file contents).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::meta::{Kind, Meta};

pub mod claim;
pub mod tree;

/// What an entry's fixed cost counts as, in bytes (see the module doc).
pub const ENTRY_COST: u64 = 64 * 1024;

/// This process's share: `index` of `count` (0 ≤ index < count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// FNV-1a 64 of `bytes`: the hash every process, machine and version agrees on.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn path_bytes(p: &Path) -> &[u8] {
    let b = p.as_os_str().as_bytes();
    let b = b.strip_prefix(b"./").unwrap_or(b);
    b.strip_suffix(b"/").unwrap_or(b)
}

impl Shard {
    /// Whether a name the source lacks, at `rel` below DEST, is this share's to delete.
    pub fn owns_absent(&self, rel: &Path) -> bool {
        fnv1a64(path_bytes(rel)) % self.count == self.index
    }

    /// Which of a directory's source entries (directory `dir` below DEST) are this
    /// share's, in the order given, dealing the directory on its own. Directories are always included (every share walks
    /// them); with `hard_links`, files with several links never are.
    pub fn mine(&self, dir: &Path, entries: &[(&[u8], &Meta)], hard_links: bool) -> Vec<bool> {
        let n = self.count;
        let offset = fnv1a64(path_bytes(dir)) % n;
        let mut mine: Vec<bool> = entries.iter().map(|(_, m)| m.kind == Kind::Dir).collect();
        let mut dealt: Vec<(u64, &[u8], usize)> = entries
            .iter()
            .enumerate()
            .filter(|(_, (_, m))| {
                m.kind != Kind::Dir && !(hard_links && m.kind == Kind::File && m.nlink > 1)
            })
            .map(|(i, (name, m))| {
                let size = if m.kind == Kind::File { m.size } else { 0 };
                (size.saturating_add(ENTRY_COST), *name, i)
            })
            .collect();
        dealt.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        // (cost so far, rank from the offset): the least loaded share, first from the
        // offset on ties. Only the first min(N, entries) shares can receive anything.
        let mut heap: BinaryHeap<Reverse<(u64, u64)>> = (0..n.min(dealt.len() as u64))
            .map(|rank| Reverse((0, rank)))
            .collect();
        for (cost, _, i) in dealt {
            let Reverse((load, rank)) = heap.pop().expect("one share at least");
            if (offset + rank) % n == self.index {
                mine[i] = true;
            }
            heap.push(Reverse((load.saturating_add(cost), rank)));
        }
        mine
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_is_the_published_function() {
        // Test vectors of FNV-1a 64 (Fowler, Noll, Vo).
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn every_entry_has_exactly_one_share_and_directories_all() {
        let metas: Vec<(String, Meta)> = (0..50)
            .map(|i| {
                let kind = if i % 7 == 0 { Kind::Dir } else { Kind::File };
                (format!("f{i}"), Meta::of(kind, (i * 7919 % 3000) as u64))
            })
            .collect();
        let entries: Vec<(&[u8], &Meta)> = metas.iter().map(|(n, m)| (n.as_bytes(), m)).collect();
        for n in [1, 2, 3, 4, 7, 64] {
            let shares: Vec<Vec<bool>> = (0..n)
                .map(|k| Shard { index: k, count: n }.mine(Path::new("a/b"), &entries, false))
                .collect();
            for (i, (_, m)) in entries.iter().enumerate() {
                let owners = shares.iter().filter(|s| s[i]).count();
                let want = if m.kind == Kind::Dir { n as usize } else { 1 };
                assert_eq!(owners, want, "entry {i} with {n} shards");
            }
        }
    }

    #[test]
    fn one_large_file_and_many_small_balance_bytes_and_files() {
        let mut metas = vec![("big".to_string(), Meta::of(Kind::File, 4 << 20))];
        for i in 0..3 {
            metas.push((format!("mid{i}"), Meta::of(Kind::File, 4 << 20)));
        }
        for i in 0..400 {
            metas.push((format!("s{i}"), Meta::of(Kind::File, 100 + i)));
        }
        let entries: Vec<(&[u8], &Meta)> = metas.iter().map(|(n, m)| (n.as_bytes(), m)).collect();
        for k in 0..4 {
            let mine = Shard { index: k, count: 4 }.mine(Path::new(""), &entries, false);
            let files = mine.iter().filter(|&&b| b).count();
            let bytes: u64 = mine
                .iter()
                .zip(&entries)
                .filter(|(b, _)| **b)
                .map(|(_, (_, m))| m.size)
                .sum();
            assert!((95..=106).contains(&files), "shard {k}: {files} files");
            assert!(
                ((4 << 20)..(4 << 20) + 60_000).contains(&bytes),
                "shard {k}: {bytes}"
            );
        }
    }

    #[test]
    fn multi_link_files_are_left_to_the_finalize_run_with_hard_links() {
        let mut linked = Meta::of(Kind::File, 10);
        linked.nlink = 2;
        let entries: Vec<(&[u8], &Meta)> = vec![(b"x", &linked)];
        for k in 0..3 {
            let s = Shard { index: k, count: 3 };
            assert_eq!(s.mine(Path::new(""), &entries, true), [false]);
        }
        let owners = (0..3)
            .filter(|&k| Shard { index: k, count: 3 }.mine(Path::new(""), &entries, false)[0])
            .count();
        assert_eq!(owners, 1);
    }

    #[test]
    fn absent_names_have_one_owner() {
        for name in ["a", "b/c", "node_modules/x/y.js"] {
            let owners = (0..5)
                .filter(|&k| Shard { index: k, count: 5 }.owns_absent(Path::new(name)))
                .count();
            assert_eq!(owners, 1, "{name}");
        }
    }
}
