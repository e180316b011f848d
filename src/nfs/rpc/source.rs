//! A tree on the server read as a source, for both NFS versions, over the calls the
//! destination side makes (READDIRPLUS or READDIR with attributes, READ, READLINK,
//! REMOVE): the walk's [`RemoteDir`].
//!
//! A directory is listed once, one call per page, and keeps the handles its listing
//! carried: opening a listed file or directory costs no LOOKUP. A file is read as the
//! copy consumes it (`stream.rs`): its size, mtime and change number after the
//! last byte are what the copy checks against the listing, so a file that changed
//! while it was read never gets the source's mtime at the destination.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::{Arc, Mutex};

use super::ops::{FileOps, NfsOps, ObjectOps, to_io};
use super::stream;
use crate::meta::{Kind, Meta};
use crate::source::RemoteDir;
use crate::source::{Data, Entries};

/// name → (handle, attributes as listed).
type Handles<F> = HashMap<Vec<u8>, (F, Meta)>;

/// A directory on the server, with the handles of what its listing found.
pub struct SourceDir<T: NfsOps> {
    ops: Arc<T>,
    dir: T::Dir,
    /// The top of the transfer, where symlinks followed on the server are resolved
    /// from, and this directory's path below it.
    top: T::Dir,
    at: Vec<Vec<u8>>,
    /// The handles of the directories above it, nearest first: a server that hands out
    /// an ancestor's handle as a child's would be walked forever.
    above: Option<Arc<Lineage>>,
    /// What [`RemoteDir::entries`] found, by name.
    handles: Mutex<Handles<T::Fh>>,
}

/// A directory's handle and those above it, shared by its children.
struct Lineage {
    fh: Vec<u8>,
    up: Option<Arc<Lineage>>,
}

impl Lineage {
    fn holds(mut at: Option<&Arc<Lineage>>, fh: &[u8]) -> bool {
        while let Some(l) = at {
            if l.fh == fh {
                return true;
            }
            at = l.up.as_ref();
        }
        false
    }
}

impl<T: NfsOps> SourceDir<T> {
    /// The directory `dir` of the client `ops`, the top of a transfer.
    pub fn new(ops: Arc<T>, dir: T::Dir) -> Self {
        SourceDir {
            ops,
            top: dir.clone(),
            dir,
            at: Vec::new(),
            above: None,
            handles: Mutex::new(HashMap::new()),
        }
    }

    /// The directory `dir`, at `at` below the top of a transfer `top`.
    pub fn below(ops: Arc<T>, top: T::Dir, dir: T::Dir, at: Vec<Vec<u8>>) -> Self {
        SourceDir {
            ops,
            dir,
            top,
            at,
            above: None,
            handles: Mutex::new(HashMap::new()),
        }
    }

    /// A second handle on this directory (its listing's handles not shared).
    fn again(&self) -> SourceDir<T> {
        SourceDir {
            above: self.above.clone(),
            ..SourceDir::below(
                self.ops.clone(),
                self.top.clone(),
                self.dir.clone(),
                self.at.clone(),
            )
        }
    }

    /// The directory `name` in it, whose handle is `fh`.
    fn child(&self, fh: T::Fh, name: &[u8]) -> SourceDir<T> {
        let mut at = self.at.clone();
        at.push(name.to_vec());
        let above = Some(Arc::new(Lineage {
            fh: T::handle(&self.dir).to_vec(),
            up: self.above.clone(),
        }));
        SourceDir {
            ops: self.ops.clone(),
            dir: T::child(&self.dir, fh, name),
            top: self.top.clone(),
            at,
            above,
            handles: Mutex::new(HashMap::new()),
        }
    }

    /// The listed directory `name`, refused when its handle is its own or an
    /// ancestor's (a server that loops the tree back on itself).
    fn subdir(&self, fh: T::Fh, name: &[u8]) -> io::Result<SourceDir<T>> {
        let d = self.child(fh, name);
        if Lineage::holds(d.above.as_ref(), T::handle(&d.dir)) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the server gave this directory the handle of itself or of a directory above it (a looping server)",
            ));
        }
        Ok(d)
    }

    /// The directory at `path` below the top, looked up a component at a time (never
    /// through a symlink).
    fn below_top(&self, path: &[Vec<u8>]) -> io::Result<SourceDir<T>> {
        let mut d = SourceDir::new(self.ops.clone(), self.top.clone());
        for c in path {
            d = match self.ops.find(&d.dir, c).map_err(to_io)? {
                Some((fh, m)) if m.kind == Kind::Dir => d.child(fh, c),
                Some(_) => return Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
                None => return Err(not_found()),
            };
        }
        Ok(d)
    }

    /// Where the symlink `name` leads, resolved on the server from the top of the
    /// transfer (`-L`, `-k`): the directory holding its referent, the referent's
    /// name and attributes. A target that is absolute or climbs above the top names
    /// a place of the client's namespace, not the server's: refused.
    fn resolve(&self, name: &[u8]) -> io::Result<(SourceDir<T>, Vec<u8>, Meta)> {
        let outside = |t: &[u8]| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "symlink to {} leads outside the transfer, which an nfs:// source cannot follow",
                    crate::report::Escaped(OsStr::from_bytes(t))
                ),
            )
        };
        let mut done: Vec<Vec<u8>> = self.at.clone();
        let mut dir = self.again();
        let mut todo: std::collections::VecDeque<Vec<u8>> = [name.to_vec()].into();
        let mut hops = 0;
        while let Some(c) = todo.pop_front() {
            match &c[..] {
                b"" | b"." => continue,
                b".." => {
                    if done.pop().is_none() {
                        return Err(outside(b".."));
                    }
                    dir = self.below_top(&done)?;
                    continue;
                }
                _ => {}
            }
            let Some((fh, m)) = self.ops.find(&dir.dir, &c).map_err(to_io)? else {
                return Err(not_found());
            };
            if m.kind == Kind::Symlink {
                hops += 1;
                if hops > MAX_HOPS {
                    return Err(io::Error::from_raw_os_error(libc::ELOOP));
                }
                let t = self.ops.read_link(&dir.dir, &c).map_err(to_io)?;
                if t.first() == Some(&b'/') {
                    return Err(outside(&t));
                }
                for part in t.split(|&b| b == b'/').rev() {
                    todo.push_front(part.to_vec());
                }
                continue;
            }
            if todo.iter().all(|t| t.is_empty() || t == b".") {
                return Ok((dir, c, m));
            }
            if m.kind != Kind::Dir {
                return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
            }
            dir = dir.child(fh, &c);
            done.push(c);
        }
        // The walk ended on a directory (a target ending in `..`): name it from its
        // parent.
        match done.pop() {
            Some(last) => {
                let parent = self.below_top(&done)?;
                match self.ops.find(&parent.dir, &last).map_err(to_io)? {
                    Some((_, m)) => Ok((parent, last, m)),
                    None => Err(not_found()),
                }
            }
            // The top itself: copying it into itself would never end.
            None => Err(io::Error::from_raw_os_error(libc::ELOOP)),
        }
    }
}

/// Symlinks followed in one resolution before it is given up as a loop (Linux's
/// `MAXSYMLINKS`).
const MAX_HOPS: u32 = 40;

impl<T: NfsOps> SourceDir<T> {
    /// `name`'s handle and attributes: the listing's, else a LOOKUP.
    fn handle(&self, name: &[u8]) -> io::Result<Option<(T::Fh, Meta)>> {
        if let Some(hit) = self.handles.lock().ok().and_then(|h| h.get(name).cloned()) {
            return Ok(Some(hit));
        }
        self.ops.find(&self.dir, name).map_err(to_io)
    }
}

fn not_found() -> io::Error {
    io::Error::from_raw_os_error(libc::ENOENT)
}

impl<T: FileOps + ObjectOps + 'static> RemoteDir for SourceDir<T> {
    fn entries(&self) -> io::Result<Entries> {
        let listed = self.ops.read_dir(&self.dir).map_err(to_io)?;
        let mut out = Vec::with_capacity(listed.entries.len());
        // A refused name is reported as the directory's problem: it is no name to
        // join to a path, not even to print one.
        let mut problems: Vec<_> = (listed.refused.iter())
            .map(|r| (OsString::new(), r.to_io()))
            .collect();
        let mut handles = HashMap::with_capacity(listed.entries.len());
        for e in listed.entries {
            // A listing without attributes or handles (a server's choice): one LOOKUP.
            let found = match (e.fh, e.meta) {
                (Some(fh), Some(m)) => Ok(Some((fh, m))),
                _ => self.ops.find(&self.dir, &e.name),
            };
            match found {
                Ok(Some((fh, m))) => {
                    out.push((OsString::from_vec(e.name.clone()), m));
                    handles.insert(e.name, (fh, m));
                }
                Ok(None) => problems.push((OsString::from_vec(e.name), not_found())),
                Err(err) if err.is_fatal() => return Err(to_io(err)),
                Err(err) => problems.push((OsString::from_vec(e.name), to_io(err))),
            }
        }
        if let Ok(mut h) = self.handles.lock() {
            *h = handles;
        }
        Ok((out, problems))
    }

    fn open_dir(&self, name: &OsStr) -> io::Result<Box<dyn RemoteDir>> {
        if name.is_empty() {
            return Ok(Box::new(self.again()));
        }
        let name = name.as_bytes();
        match self.handle(name)? {
            Some((fh, m)) if m.kind == Kind::Dir => Ok(Box::new(self.subdir(fh, name)?)),
            // Never through a symlink, as a local source is never.
            Some((_, m)) if m.kind == Kind::Symlink => {
                Err(io::Error::from_raw_os_error(libc::ELOOP))
            }
            Some(_) => Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
            None => Err(not_found()),
        }
    }

    fn open_file(&self, name: &OsStr, listed: &Meta, paced: bool) -> io::Result<Option<Data>> {
        let name = name.as_bytes();
        let Some((fh, m)) = self.handle(name)? else {
            return Err(not_found());
        };
        if m.kind != Kind::File {
            return Ok(None);
        }
        match self.read_file(&fh, name, listed, paced).map(Some) {
            // Replaced since the listing: what has the name now is read (and, being
            // another file, reported as changed).
            Err(e) if e.raw_os_error() == Some(libc::ESTALE) => {
                match self.ops.find(&self.dir, name).map_err(to_io)? {
                    Some((fh, m)) if m.kind == Kind::File => {
                        self.read_file(&fh, name, listed, paced).map(Some)
                    }
                    Some(_) => Ok(None),
                    None => Err(not_found()),
                }
            }
            r => r,
        }
    }

    fn read_link(&self, name: &OsStr) -> io::Result<OsString> {
        self.ops
            .read_link(&self.dir, name.as_bytes())
            .map(OsString::from_vec)
            .map_err(to_io)
    }

    fn lstat(&self, name: &OsStr) -> io::Result<Meta> {
        match self.ops.find(&self.dir, name.as_bytes()).map_err(to_io)? {
            Some((_, m)) => Ok(m),
            None => Err(not_found()),
        }
    }

    fn remove(&self, name: &OsStr) -> io::Result<()> {
        ObjectOps::remove(&*self.ops, &self.dir, name.as_bytes(), false).map_err(to_io)
    }

    fn referent(&self, name: &OsStr) -> io::Result<(Meta, Box<dyn RemoteDir>)> {
        let (dir, name, meta) = self.resolve(name.as_bytes())?;
        let holder = Operand {
            parent: Some(Box::new(dir)),
            name: OsString::from_vec(name),
            root: None,
            meta,
        };
        Ok((meta, Box::new(holder)))
    }
}

impl<T: FileOps + 'static> SourceDir<T> {
    /// The file `fh` (`name` in this directory) opened to be read as it is consumed
    /// (see [`super::stream`]); its attributes after the last byte, or when a READ
    /// carries none those a LOOKUP of `name` gives, are what the copy checks.
    fn read_file(&self, fh: &T::Fh, name: &[u8], listed: &Meta, paced: bool) -> io::Result<Data>
    where
        T::Dir: 'static,
    {
        let refind =
            |ops: &T, dir: &T::Dir, name: &[u8]| match ops.find(dir, name).map_err(to_io)? {
                Some((_, now)) => Ok(now),
                None => Err(not_found()),
            };
        if let Some(whole) = stream::small(&*self.ops, fh, listed, || {
            refind(&self.ops, &self.dir, name)
        })? {
            return Ok(whole);
        }
        let (ops, dir, name) = (self.ops.clone(), self.dir.clone(), name.to_vec());
        let refind = Box::new(move || refind(&ops, &dir, &name));
        stream::open(self.ops.clone(), fh.clone(), listed, paced, refind)
    }
}

/// An operand of the command line that names an entry rather than a directory's
/// contents: the directory that holds it for the walk, answering for that one entry
/// whatever name the walk gives it (DEST's name for a lone file, the export root's
/// own name, which has no parent to be listed in).
pub struct Operand {
    /// Where the entry is, `None` for the export root (then `root` is the entry).
    pub parent: Option<Box<dyn RemoteDir>>,
    /// The entry's name in `parent`.
    pub name: OsString,
    /// The export root, opened, when it is the entry.
    pub root: Option<Box<dyn RemoteDir>>,
    /// The entry's attributes as found.
    pub meta: Meta,
}

impl RemoteDir for Operand {
    fn entries(&self) -> io::Result<Entries> {
        Ok((vec![(self.name.clone(), self.meta)], Vec::new()))
    }

    fn open_dir(&self, _: &OsStr) -> io::Result<Box<dyn RemoteDir>> {
        match (&self.parent, &self.root) {
            (Some(p), _) => p.open_dir(&self.name),
            (None, Some(r)) => r.open_dir(OsStr::new("")),
            (None, None) => Err(not_found()),
        }
    }

    fn open_file(&self, _: &OsStr, listed: &Meta, paced: bool) -> io::Result<Option<Data>> {
        match &self.parent {
            Some(p) => p.open_file(&self.name, listed, paced),
            None => Ok(None),
        }
    }

    fn read_link(&self, _: &OsStr) -> io::Result<OsString> {
        match &self.parent {
            Some(p) => p.read_link(&self.name),
            None => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        }
    }

    fn lstat(&self, _: &OsStr) -> io::Result<Meta> {
        match &self.parent {
            Some(p) => p.lstat(&self.name),
            None => Ok(self.meta),
        }
    }

    fn remove(&self, _: &OsStr) -> io::Result<()> {
        match &self.parent {
            Some(p) => p.remove(&self.name),
            None => Err(io::Error::from_raw_os_error(libc::EBUSY)),
        }
    }

    fn referent(&self, _: &OsStr) -> io::Result<(Meta, Box<dyn RemoteDir>)> {
        match &self.parent {
            Some(p) => p.referent(&self.name),
            None => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        }
    }
}
