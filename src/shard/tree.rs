//! The deal over the whole tree: before copying, every shard lists the whole source
//! once (the same listing on every machine) and deals it in pieces, the same way in
//! every process, so no process talks to another.
//!
//! A piece is either a whole subtree whose cost is at most 1/[`PIECES_PER_SHARE`] of
//! a share's, or a run of one larger directory's own entries (largest first, the
//! same bound) — a large file being a run of its own. Whole subtrees keep a share's work
//! together: a shard walks, creates and lists only the directories where it has
//! entries at or below (see [`TreeDeal::walks`]), so N shards do not each pay a
//! round trip for every directory of the tree. Small pieces keep shares alike.
//!
//! A piece's cost is its share of the tree's files plus its share of the tree's bytes
//! (`n/F + b/B`, computed as `n·B + b·F`). Pieces are dealt densest first (bytes per
//! entry), each to the share where the sum of the squares of its two loads (files
//! against F, bytes against B) ends up least, ties to the lowest share: the large
//! files go first and spread the bytes, and the last pieces, of small files, even out
//! the file counts, the share holding a large file taking more of them (the rig's
//! node_modules corpus has a 6 MB bundle in a 36 MB tree).
//!
//! It costs one walk of the source before the copy, [`LISTERS`] directories listed at
//! once through whatever holds them (local `readdir` and `lstat`s, or an `nfs://`
//! source's READDIRPLUS round trips, the same listing on every machine), and memory
//! for every entry while dealing. Past [`MAX_ENTRIES`] the deal is given up and each directory is dealt
//! on its own ([`super::Shard::mine`], every shard walking every directory); so are
//! entries and directories that appear after the deal.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::ops::Range;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::Shard;
use crate::meta::Kind;
use crate::source::{self, SrcEntry};

/// The most entries dealt as one list (memory: about 100 bytes each while dealing).
pub const MAX_ENTRIES: usize = 4_000_000;

/// How many pieces a share is cut into at least: more balance the shares better,
/// fewer keep each share's directories together.
pub const PIECES_PER_SHARE: u128 = 16;

/// Whether each non-directory entry of the tree is this share's, by directory below
/// DEST and name, and which directories this share walks.
#[derive(Debug, Default)]
pub struct TreeDeal {
    /// Every directory the deal saw (DEST itself is the empty path): whether this share
    /// has entries at or below it, and its entries that are not directories.
    dirs: HashMap<PathBuf, (bool, HashMap<OsString, bool>)>,
}

/// A source directory while dealing.
struct Dir {
    rel: PathBuf,
    parent: usize,
    children: Vec<usize>,
    /// The entries that are dealt: name, size, and whether this share got it.
    entries: Vec<(OsString, u64, bool)>,
    /// Entries and bytes at or below.
    count: u128,
    bytes: u128,
    walk: bool,
}

/// What is dealt as one.
enum Piece {
    Subtree(usize),
    Run(usize, Range<usize>),
}

impl TreeDeal {
    /// Lists the tree under `top` (the children of DEST itself, as the run copies
    /// them) and deals it; `None` past [`MAX_ENTRIES`]. Unreadable directories are
    /// left out (the copy reports them).
    pub fn build(shard: Shard, top: &[SrcEntry], hard_links: bool) -> Option<TreeDeal> {
        let mut dirs = list(top, hard_links)?;
        for i in (1..dirs.len()).rev() {
            let (p, c, b) = (dirs[i].parent, dirs[i].count, dirs[i].bytes);
            dirs[p].count += c;
            dirs[p].bytes += b;
        }
        // At least one entry and one byte, so a tree of empty directories divides by
        // nothing.
        let files = dirs[0].count.max(1);
        let bytes = dirs[0].bytes.max(1);
        let cost = |n: u128, b: u128| n * bytes + b * files;
        let bound = cost(files, bytes) / (PIECES_PER_SHARE * u128::from(shard.count));

        let mut pieces: Vec<(u128, u128, Vec<u8>, Piece)> = Vec::new();
        let mut todo = vec![0];
        while let Some(d) = todo.pop() {
            let dir = &mut dirs[d];
            if d != 0 && cost(dir.count, dir.bytes) <= bound {
                let k = key(&dir.rel, None);
                pieces.push((dir.count, dir.bytes, k, Piece::Subtree(d)));
                continue;
            }
            // Largest first: runs of alike sizes, which the deal can mix.
            dir.entries
                .sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let mut start = 0;
            let (mut n, mut b) = (0, 0);
            for i in 0..=dir.entries.len() {
                let size = dir.entries.get(i).map_or(0, |e| u128::from(e.1));
                if i == dir.entries.len() || (i > start && cost(n + 1, b + size) > bound) {
                    if i > start {
                        let k = key(&dir.rel, Some(&dir.entries[start].0));
                        pieces.push((n, b, k, Piece::Run(d, start..i)));
                    }
                    (start, n, b) = (i, 0, 0);
                }
                n += 1;
                b += size;
            }
            todo.extend(dir.children.iter().copied());
        }
        // Densest first; empty subtrees last (each goes to a share that then makes it).
        pieces.sort_unstable_by(|x, y| {
            (x.0 == 0)
                .cmp(&(y.0 == 0))
                .then_with(|| (y.1 * x.0).cmp(&(x.1 * y.0)))
                .then_with(|| cost(y.0, y.1).cmp(&cost(x.0, x.1)))
                .then_with(|| x.2.cmp(&y.2))
        });

        let mut loads = vec![(0u128, 0u128); shard.count as usize];
        for (n, b, _, piece) in pieces {
            // IEEE arithmetic without fused steps: the same on every machine.
            let score = |(f, s): (u128, u128)| {
                let (f, s) = ((f + n) as f64 / files as f64, (s + b) as f64 / bytes as f64);
                f * f + s * s
            };
            let k = (0..loads.len())
                .min_by(|&x, &y| score(loads[x]).total_cmp(&score(loads[y])))
                .expect("one share at least");
            loads[k] = (loads[k].0 + n, loads[k].1 + b);
            let k = k as u64;
            if k != shard.index {
                continue;
            }
            let d = match piece {
                Piece::Subtree(d) => {
                    let mut below = vec![d];
                    while let Some(b) = below.pop() {
                        dirs[b].walk = true;
                        dirs[b].entries.iter_mut().for_each(|e| e.2 = true);
                        below.extend(dirs[b].children.iter().copied());
                    }
                    dirs[d].parent
                }
                Piece::Run(d, range) => {
                    dirs[d].entries[range].iter_mut().for_each(|e| e.2 = true);
                    d
                }
            };
            let mut a = d;
            while !dirs[a].walk {
                dirs[a].walk = true;
                a = dirs[a].parent;
            }
        }

        let mut deal = TreeDeal::default();
        for dir in dirs {
            let entries = dir.entries.into_iter().map(|(n, _, m)| (n, m)).collect();
            deal.dirs.insert(dir.rel, (dir.walk, entries));
        }
        Some(deal)
    }

    /// Whether `name` in `dir` is this share's; `None` when the deal did not see it.
    pub fn lookup(&self, dir: &Path, name: &std::ffi::OsStr) -> Option<bool> {
        self.dirs.get(dir)?.1.get(name).copied()
    }

    /// Whether this share has anything at or below directory `dir`, so walks it;
    /// `None` when the deal did not see it (then every share walks it).
    pub fn walks(&self, dir: &Path) -> Option<bool> {
        self.dirs.get(dir).map(|d| d.0)
    }
}

/// How many directories are listed at once while dealing: a source read over the
/// network (`nfs://`) answers each listing after round trips, so one at a time would
/// hold the copy for the sum of them.
pub const LISTERS: usize = 16;

/// How many directories are listed before their entries are counted: bounds what is
/// held past [`MAX_ENTRIES`].
const BATCH: usize = 4 * LISTERS;

/// The source tree under `top`, parents before their children (index 0 is DEST);
/// `None` past [`MAX_ENTRIES`] entries. Directories are listed [`LISTERS`] at a time;
/// what is dealt does not depend on the order they come in (pieces are ordered by
/// their paths).
fn list(top: &[SrcEntry], hard_links: bool) -> Option<Vec<Dir>> {
    let dir = |rel: PathBuf, parent: usize| Dir {
        rel,
        parent,
        children: Vec::new(),
        entries: Vec::new(),
        count: 0,
        bytes: 0,
        walk: false,
    };
    let mut dirs = vec![dir(PathBuf::new(), 0)];
    // DEST is walked by every share.
    dirs[0].walk = true;
    let mut total = 0usize;
    // Directories still to list: their parent's index in `dirs`, and their entry.
    let mut queue: VecDeque<(usize, SrcEntry)> = VecDeque::new();
    let mut listed: Vec<(usize, Vec<SrcEntry>)> = vec![(0, top.to_vec())];
    loop {
        for (d, entries) in listed.drain(..) {
            for e in entries {
                if e.meta.kind == Kind::Dir {
                    queue.push_back((d, e));
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
                dirs[d].entries.push((e.name, size, false));
                dirs[d].count += 1;
                dirs[d].bytes += u128::from(size);
                total += 1;
                if total > MAX_ENTRIES {
                    return None;
                }
            }
        }
        if queue.is_empty() {
            return Some(dirs);
        }
        let batch: Vec<(usize, SrcEntry)> = queue.drain(..queue.len().min(BATCH)).collect();
        for ((parent, e), children) in batch.iter().zip(list_all(&batch)) {
            // Unreadable directories are left out (the copy reports them).
            if let Some(children) = children {
                let c = dirs.len();
                dirs.push(dir(dirs[*parent].rel.join(&e.name), *parent));
                dirs[*parent].children.push(c);
                listed.push((c, children));
            }
        }
    }
}

/// The entries of each directory of `batch`, in its order (`None`: unreadable), listed
/// by up to [`LISTERS`] threads.
fn list_all(batch: &[(usize, SrcEntry)]) -> Vec<Option<Vec<SrcEntry>>> {
    let one = |e: &SrcEntry| source::list_entry(e).ok().map(|(children, _)| children);
    let threads = batch.len().min(LISTERS);
    if threads <= 1 {
        return batch.iter().map(|(_, e)| one(e)).collect();
    }
    let next = AtomicUsize::new(0);
    let got: Vec<Mutex<Option<Vec<SrcEntry>>>> = batch.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((_, e)) = batch.get(i) else { break };
                    *got[i].lock().unwrap() = one(e);
                }
            });
        }
    });
    got.into_iter().map(|m| m.into_inner().unwrap()).collect()
}

/// The order of pieces of equal cost: directory path bytes, then a run's first name.
fn key(rel: &Path, first: Option<&OsString>) -> Vec<u8> {
    let mut k = rel.as_os_str().as_bytes().to_vec();
    if let Some(f) = first {
        k.push(0);
        k.extend_from_slice(f.as_bytes());
    }
    k
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
            parent: None,
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

    #[test]
    fn each_share_walks_only_where_it_has_entries_and_every_directory_is_someones() {
        // 300 small packages, one big flat directory, an empty directory.
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for p in 0..300 {
            let pkg = root.join(format!("node_modules/pkg{p}"));
            std::fs::create_dir_all(pkg.join("lib")).unwrap();
            std::fs::write(pkg.join("package.json"), vec![b'x'; 300 + p * 7 % 500]).unwrap();
            std::fs::write(pkg.join("lib/index.js"), vec![b'x'; 1000 + p * 31 % 9000]).unwrap();
        }
        std::fs::create_dir_all(root.join("flat")).unwrap();
        for i in 0..400 {
            std::fs::write(
                root.join(format!("flat/m{i}")),
                vec![b'x'; 100 + i * 13 % 700],
            )
            .unwrap();
        }
        std::fs::create_dir_all(root.join("empty/inner")).unwrap();
        let (top, _) = source::list_dir(root).unwrap();
        let dirs: Vec<PathBuf> = walkdir(root);
        let files: Vec<(PathBuf, u64)> = dirs
            .iter()
            .flat_map(|d| {
                std::fs::read_dir(root.join(d))
                    .unwrap()
                    .flatten()
                    .filter_map(|e| {
                        let m = e.metadata().unwrap();
                        m.is_file().then(|| (d.join(e.file_name()), m.len()))
                    })
            })
            .collect();

        let n = 4;
        let deals: Vec<TreeDeal> = (0..n)
            .map(|k| TreeDeal::build(Shard { index: k, count: n }, &top, false).unwrap())
            .collect();
        let mine = |d: &TreeDeal, f: &Path| d.lookup(f.parent().unwrap(), f.file_name().unwrap());
        for (f, _) in &files {
            let owners = deals.iter().filter(|d| mine(d, f) == Some(true)).count();
            assert_eq!(owners, 1, "{}", f.display());
        }
        let mut walked = 0;
        for dir in dirs.iter().filter(|d| !d.as_os_str().is_empty()) {
            let walkers: Vec<bool> = deals.iter().map(|d| d.walks(dir).unwrap()).collect();
            assert!(walkers.contains(&true), "nobody makes {}", dir.display());
            for (k, d) in deals.iter().enumerate() {
                let below = files
                    .iter()
                    .any(|(f, _)| f.starts_with(dir) && mine(d, f) == Some(true));
                // An empty subtree is walked by the one share it was dealt to.
                let empty = !files.iter().any(|(f, _)| f.starts_with(dir));
                assert!(
                    walkers[k] == below || (empty && walkers.iter().filter(|w| **w).count() == 1),
                    "share {k}, {}: walks {} but has entries below: {below}",
                    dir.display(),
                    walkers[k]
                );
            }
            walked += walkers.iter().filter(|w| **w).count();
        }
        // Every share walks node_modules and flat; the packages are mostly one share's.
        assert!(
            walked < 2 * (dirs.len() - 1),
            "{walked} walks of {} directories",
            dirs.len() - 1
        );
        let total_bytes: u64 = files.iter().map(|f| f.1).sum();
        for (k, d) in deals.iter().enumerate() {
            let got: Vec<u64> = files
                .iter()
                .filter(|(f, _)| mine(d, f) == Some(true))
                .map(|f| f.1)
                .collect();
            let (c, b) = (got.len() as f64, got.iter().sum::<u64>() as f64);
            assert!(
                (c / (files.len() as f64 / 4.0) - 1.0).abs() < 0.2,
                "share {k}: {c} files"
            );
            assert!(
                (b / (total_bytes as f64 / 4.0) - 1.0).abs() < 0.2,
                "share {k}: {b} bytes"
            );
        }
        // What the deal did not see is left to the per-directory deal.
        assert_eq!(deals[0].walks(Path::new("new")), None);
    }

    /// Every directory below `root` (its path below `root`; `root` itself is empty).
    fn walkdir(root: &Path) -> Vec<PathBuf> {
        let mut out = vec![PathBuf::new()];
        let mut i = 0;
        while i < out.len() {
            for e in std::fs::read_dir(root.join(&out[i])).unwrap().flatten() {
                if e.file_type().unwrap().is_dir() {
                    let rel = out[i].join(e.file_name());
                    out.push(rel);
                }
            }
            i += 1;
        }
        out
    }
}
