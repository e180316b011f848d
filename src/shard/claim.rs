//! Shares decided while the run goes on (`--mpi`): every process walks the whole
//! tree, as a `--shard` process does, and asks for each piece of work just before
//! it would start it; the first to ask gets it, the others go on walking. A process
//! on a slower client or link asks less often, so it ends up with less, and none
//! waits for another.
//!
//! The pieces ([`units`]) are cut from one directory's listing alone, so every
//! process cuts the same ones without talking to the others: the directory's
//! entries that are not directories, in name order, in runs of about [`UNIT_COST`]
//! (the cost of [`super::ENTRY_COST`] per entry plus a file's bytes). A directory of
//! a few files is one unit; a directory of 100,000 is thousands, spread over every
//! process; a large file is a unit of its own.
//!
//! A unit is named by FNV-1a 64 of its directory's path below DEST, a 0 byte and the
//! name of its first entry. If two processes list a directory differently (the
//! source changed between their listings) some units differ; an entry in no unit
//! any process got is copied by the finalize run, which copies whatever is missing.
//! A 64-bit collision between two units does the same: the second is refused to
//! everyone and the finalize run copies it.
//!
//! What `--delete` removes from a directory is one more unit, named with an empty
//! first name (no entry has one), asked for only where there is something to remove.
//!
//! Once one process has walked the whole tree, every unit is someone's: the others
//! learn it with their next answer ([`Claim::all_taken`]) and stop walking, so a
//! process on a slow link does not hold the rest while it walks what is done.

use std::collections::HashSet;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::{ENTRY_COST, fnv1a64, path_bytes};
use crate::meta::{Kind, Meta};

/// About how much work one unit is: 16 small files, or 1 MiB of data.
pub const UNIT_COST: u64 = 16 * ENTRY_COST;

/// Hands out units: each to the first process that asks for it.
pub trait Claim: Send + Sync {
    /// Asks for `units`; for each, whether this process got it.
    fn claim(&self, units: &[u64]) -> Vec<bool>;

    /// Whether every unit of the tree is taken: a process has walked all of it.
    fn all_taken(&self) -> bool {
        false
    }
}

/// A shared handle on a [`Claim`], kept in the run's configuration.
#[derive(Clone)]
pub struct Claims(pub Arc<dyn Claim>);

impl fmt::Debug for Claims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Claims")
    }
}

impl Claims {
    pub fn claim(&self, units: &[u64]) -> Vec<bool> {
        if units.is_empty() {
            return Vec::new();
        }
        self.0.claim(units)
    }

    pub fn all_taken(&self) -> bool {
        self.0.all_taken()
    }
}

/// The units of one process (or of the processes that ask it): every unit is given
/// once, to the first that asks.
#[derive(Debug, Default)]
pub struct Ledger {
    given: Mutex<HashSet<u64>>,
    walked: AtomicBool,
}

impl Ledger {
    /// A process has walked the whole tree (its run ended, neither interrupted nor
    /// failed).
    pub fn walked(&self) {
        self.walked.store(true, Ordering::Relaxed);
    }
}

impl Claim for Ledger {
    fn claim(&self, units: &[u64]) -> Vec<bool> {
        let mut given = self.given.lock().unwrap();
        units.iter().map(|&u| given.insert(u)).collect()
    }

    fn all_taken(&self) -> bool {
        self.walked.load(Ordering::Relaxed)
    }
}

/// One unit of a directory: its name and the indices of its entries.
#[derive(Debug, PartialEq, Eq)]
pub struct Unit {
    pub key: u64,
    pub entries: Vec<usize>,
}

/// Cuts the entries of directory `dir` (below DEST) into units. Directories are in
/// none (every process walks them); with `hard_links`, nor are files with several
/// links (only the finalize run, which sees all of them, can link them).
pub fn units(dir: &Path, entries: &[(&[u8], &Meta)], hard_links: bool) -> Vec<Unit> {
    let mut order: Vec<usize> = (0..entries.len())
        .filter(|&i| {
            let m = entries[i].1;
            m.kind != Kind::Dir && !(hard_links && m.kind == Kind::File && m.nlink > 1)
        })
        .collect();
    order.sort_by(|&a, &b| entries[a].0.cmp(entries[b].0));
    let dir = path_bytes(dir);
    let mut out: Vec<Unit> = Vec::new();
    let mut load = 0u64;
    for i in order {
        let (name, m) = entries[i];
        let size = if m.kind == Kind::File { m.size } else { 0 };
        let cost = size.saturating_add(ENTRY_COST);
        match out.last_mut() {
            Some(u) if load.saturating_add(cost) <= UNIT_COST => {
                u.entries.push(i);
                load += cost;
            }
            _ => {
                out.push(Unit {
                    key: key(dir, name),
                    entries: vec![i],
                });
                load = cost;
            }
        }
    }
    out
}

/// The unit of what `--delete` removes from directory `dir`.
pub fn deletions(dir: &Path) -> u64 {
    key(path_bytes(dir), b"")
}

fn key(dir: &[u8], first: &[u8]) -> u64 {
    let mut bytes = Vec::with_capacity(dir.len() + 1 + first.len());
    bytes.extend_from_slice(dir);
    bytes.push(0);
    bytes.extend_from_slice(first);
    fnv1a64(&bytes)
}

/// The names of `entries` in units this process got, asking `claims` for all of the
/// directory's units at once (one round trip).
pub fn claimed<'e>(
    claims: &Claims,
    dir: &Path,
    entries: &[(&'e [u8], &Meta)],
    hard_links: bool,
) -> Vec<&'e [u8]> {
    let units = units(dir, entries, hard_links);
    let keys: Vec<u64> = units.iter().map(|u| u.key).collect();
    let got = claims.claim(&keys);
    units
        .iter()
        .zip(got)
        .filter(|(_, got)| *got)
        .flat_map(|(u, _)| u.entries.iter().map(|&i| entries[i].0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(n: usize, size: u64) -> Vec<(String, Meta)> {
        (0..n)
            .map(|i| (format!("f{i:05}"), Meta::of(Kind::File, size)))
            .collect()
    }

    fn view(l: &[(String, Meta)]) -> Vec<(&[u8], &Meta)> {
        l.iter().map(|(n, m)| (n.as_bytes(), m)).collect()
    }

    #[test]
    fn a_small_directory_is_one_unit_and_a_big_one_many() {
        let small = listing(5, 100);
        assert_eq!(units(Path::new("a"), &view(&small), false).len(), 1);
        let big = listing(10_000, 100);
        let u = units(Path::new("a"), &view(&big), false);
        // 16 entries of 64 KiB + 100 bytes exceed 1 MiB: 15 per unit.
        assert_eq!(u.len(), 10_000usize.div_ceil(15));
        let keys: HashSet<u64> = u.iter().map(|u| u.key).collect();
        assert_eq!(keys.len(), u.len(), "unit names are distinct");
    }

    #[test]
    fn every_entry_but_directories_is_in_exactly_one_unit_in_name_order() {
        let mut l = listing(40, 5000);
        l.push(("big".into(), Meta::of(Kind::File, 50 << 20)));
        l.push(("sub".into(), Meta::of(Kind::Dir, 0)));
        l.reverse();
        let v = view(&l);
        let u = units(Path::new(""), &v, false);
        let mut seen: Vec<usize> = u.iter().flat_map(|u| u.entries.clone()).collect();
        let names: Vec<&[u8]> = seen.iter().map(|&i| v[i].0).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 41);
        assert!(!names.contains(&&b"sub"[..]));
        // The large file is a unit of its own.
        assert!(
            u.iter()
                .any(|u| u.entries.len() == 1 && v[u.entries[0]].0 == b"big")
        );
    }

    #[test]
    fn the_same_listing_gives_the_same_units_anywhere() {
        let l = listing(100, 3000);
        let mut shuffled = listing(100, 3000);
        shuffled.rotate_left(37);
        let a: Vec<u64> = units(Path::new("x/y"), &view(&l), false)
            .iter()
            .map(|u| u.key)
            .collect();
        let b: Vec<u64> = units(Path::new("./x/y/"), &view(&shuffled), false)
            .iter()
            .map(|u| u.key)
            .collect();
        assert_eq!(a, b);
        let c: Vec<u64> = units(Path::new("x/z"), &view(&l), false)
            .iter()
            .map(|u| u.key)
            .collect();
        assert!(
            a.iter().all(|k| !c.contains(k)),
            "another directory, other names"
        );
        assert!(!a.contains(&deletions(Path::new("x/y"))));
    }

    #[test]
    fn multi_link_files_are_left_to_the_finalize_run_with_hard_links() {
        let mut linked = Meta::of(Kind::File, 10);
        linked.nlink = 2;
        let v: Vec<(&[u8], &Meta)> = vec![(b"x", &linked)];
        assert!(units(Path::new(""), &v, true).is_empty());
        assert_eq!(units(Path::new(""), &v, false).len(), 1);
    }

    #[test]
    fn the_ledger_gives_each_unit_once() {
        let claims = Claims(Arc::new(Ledger::default()));
        let l = listing(100, 3000);
        let v = view(&l);
        let first = claimed(&claims, Path::new("d"), &v, false);
        assert_eq!(first.len(), 100);
        assert!(claimed(&claims, Path::new("d"), &v, false).is_empty());
        assert_eq!(claims.claim(&[deletions(Path::new("d"))]), [true]);
        assert_eq!(claims.claim(&[deletions(Path::new("d"))]), [false]);
    }

    #[test]
    fn the_ledger_says_all_is_taken_once_a_process_has_walked_the_tree() {
        let ledger = Arc::new(Ledger::default());
        let claims = Claims(ledger.clone());
        assert!(!claims.all_taken());
        ledger.walked();
        assert!(claims.all_taken());
    }
}
