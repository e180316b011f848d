//! Inode table of the latency mount: FUSE inode number <-> backing paths.
//!
//! The FUSE inode number is the backing file's `st_ino` (the backing tree is
//! one local file system, so these are unique), except that the backing root
//! is FUSE inode 1. Keeping the backing `st_ino` means hard links show up as
//! one inode with `nlink > 1`, which is what `rsync -H` checks.
//!
//! Each inode remembers every backing path it was looked up under (several
//! for hard links) and a reverse index path -> inode keeps unlink and rename
//! O(1). Renaming a directory rewrites the paths below it with one scan;
//! copy tools rename files (temp -> final), almost never directories.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fuser::Errno;

pub const ROOT: u64 = 1;

struct Node {
    paths: Vec<PathBuf>,
    nlookup: u64,
}

#[derive(Default)]
struct Table {
    nodes: HashMap<u64, Node>,
    by_path: HashMap<PathBuf, u64>,
}

pub struct Inodes {
    root: PathBuf,
    root_backing_ino: u64,
    table: Mutex<Table>,
}

impl Inodes {
    pub fn new(root: PathBuf, root_backing_ino: u64) -> Inodes {
        Inodes {
            root,
            root_backing_ino,
            table: Mutex::new(Table::default()),
        }
    }

    /// FUSE inode number for a backing `st_ino`.
    pub fn fuse_ino(&self, backing_ino: u64) -> u64 {
        if backing_ino == self.root_backing_ino {
            ROOT
        } else {
            backing_ino
        }
    }

    /// A current backing path of `ino`.
    pub fn path(&self, ino: u64) -> Result<PathBuf, Errno> {
        if ino == ROOT {
            return Ok(self.root.clone());
        }
        let t = self.table.lock().unwrap();
        t.nodes
            .get(&ino)
            .and_then(|n| n.paths.first().cloned())
            .ok_or(Errno::ENOENT)
    }

    /// Backing path of `name` inside directory `parent`.
    pub fn child(&self, parent: u64, name: &std::ffi::OsStr) -> Result<PathBuf, Errno> {
        Ok(self.path(parent)?.join(name))
    }

    /// Record one kernel lookup reference of `ino` reached via `path`.
    pub fn remember(&self, ino: u64, path: &Path) {
        if ino == ROOT {
            return;
        }
        let mut t = self.table.lock().unwrap();
        let node = t.nodes.entry(ino).or_insert_with(|| Node {
            paths: Vec::new(),
            nlookup: 0,
        });
        node.nlookup += 1;
        // Most recent name first: if an older name vanished behind our back
        // (or the inode number was reused), the one just looked up is valid.
        node.paths.retain(|p| p != path);
        node.paths.insert(0, path.to_path_buf());
        if let Some(old) = t.by_path.insert(path.to_path_buf(), ino)
            && old != ino
        {
            // The name now refers to a different file (replaced behind
            // our back); the old inode no longer has this path.
            if let Some(n) = t.nodes.get_mut(&old) {
                n.paths.retain(|p| p != path);
            }
        }
    }

    /// The kernel dropped `n` references to `ino`.
    pub fn forget(&self, ino: u64, n: u64) {
        if ino == ROOT {
            return;
        }
        let mut t = self.table.lock().unwrap();
        let gone = match t.nodes.get_mut(&ino) {
            Some(node) => {
                node.nlookup = node.nlookup.saturating_sub(n);
                node.nlookup == 0
            }
            None => false,
        };
        if gone && let Some(node) = t.nodes.remove(&ino) {
            for p in node.paths {
                if t.by_path.get(&p) == Some(&ino) {
                    t.by_path.remove(&p);
                }
            }
        }
    }

    /// `path` was unlinked or rmdir'ed.
    pub fn removed(&self, path: &Path) {
        let mut t = self.table.lock().unwrap();
        if let Some(ino) = t.by_path.remove(path)
            && let Some(n) = t.nodes.get_mut(&ino)
        {
            n.paths.retain(|p| p != path);
        }
    }

    /// `from` was renamed to `to` (which it replaced if it existed).
    pub fn renamed(&self, from: &Path, to: &Path, is_dir: bool) {
        let mut t = self.table.lock().unwrap();
        if let Some(victim) = t.by_path.remove(to)
            && let Some(n) = t.nodes.get_mut(&victim)
        {
            n.paths.retain(|p| p != to);
        }
        if let Some(ino) = t.by_path.remove(from) {
            if let Some(n) = t.nodes.get_mut(&ino) {
                for p in n.paths.iter_mut() {
                    if p == from {
                        *p = to.to_path_buf();
                    }
                }
            }
            t.by_path.insert(to.to_path_buf(), ino);
        }
        if is_dir {
            let Table { nodes, by_path } = &mut *t;
            let moved: Vec<(PathBuf, u64)> = by_path
                .iter()
                .filter(|(p, _)| p.starts_with(from) && p.as_path() != from)
                .map(|(p, &i)| (p.clone(), i))
                .collect();
            for (old, ino) in moved {
                let new = to.join(old.strip_prefix(from).expect("prefix checked"));
                by_path.remove(&old);
                by_path.insert(new.clone(), ino);
                if let Some(n) = nodes.get_mut(&ino) {
                    for p in n.paths.iter_mut() {
                        if *p == old {
                            *p = new.clone();
                        }
                    }
                }
            }
        }
    }
}
