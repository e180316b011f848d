//! A tree on the server read as a source, for both NFS versions, over the calls the
//! destination side makes (READDIRPLUS or READDIR with attributes, READ, READLINK,
//! REMOVE): the walk's [`RemoteDir`].
//!
//! A directory is listed once, one call per page, and keeps the handles its listing
//! carried: opening a listed file or directory costs no LOOKUP. A file is read with
//! many READs in flight into an unnamed local file, then looked up again: its size
//! and mtime after the last byte (given to the local file) are what the copy checks
//! against the listing, so a file that changed while it was read never gets the
//! source's mtime at the destination.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::{Arc, Mutex};

use super::ops::{FileOps, NfsOps, ObjectOps};
use super::pipeline;
use super::seam::unnamed_local_file;
use crate::dest;
use crate::meta::{Kind, Meta};
use crate::walk::RemoteDir;
use crate::walk::remote::Entries;

/// name → (handle, attributes as listed).
type Handles<F> = HashMap<Vec<u8>, (F, Meta)>;

/// A directory on the server, with the handles of what its listing found.
pub struct SourceDir<T: NfsOps> {
    ops: Arc<T>,
    dir: T::Dir,
    /// What [`RemoteDir::entries`] found, by name.
    handles: Mutex<Handles<T::Fh>>,
}

impl<T: NfsOps> SourceDir<T> {
    /// The directory `dir` of the client `ops`.
    pub fn new(ops: Arc<T>, dir: T::Dir) -> Self {
        SourceDir {
            ops,
            dir,
            handles: Mutex::new(HashMap::new()),
        }
    }

    /// `name`'s handle and attributes: the listing's, else a LOOKUP.
    fn handle(&self, name: &[u8]) -> io::Result<Option<(T::Fh, Meta)>> {
        if let Some(hit) = self.handles.lock().ok().and_then(|h| h.get(name).cloned()) {
            return Ok(Some(hit));
        }
        self.ops.find(&self.dir, name).map_err(to_io)
    }
}

/// A client error as the walk's: an entry's error as it is; a server that went away
/// or stopped answering keeps a kind that ends the run (see `dest::Error::from`).
pub fn to_io(e: dest::Error) -> io::Error {
    match e {
        dest::Error::Entry(e) => e,
        dest::Error::Unreachable(e) => io::Error::new(io::ErrorKind::ConnectionAborted, e),
        dest::Error::TimedOut(e) => io::Error::new(io::ErrorKind::TimedOut, e),
    }
}

fn not_found() -> io::Error {
    io::Error::from_raw_os_error(libc::ENOENT)
}

impl<T: FileOps + ObjectOps + 'static> RemoteDir for SourceDir<T> {
    fn entries(&self) -> io::Result<Entries> {
        let listed = self.ops.read_dir(&self.dir).map_err(to_io)?;
        let mut out = Vec::with_capacity(listed.len());
        let mut problems = Vec::new();
        let mut handles = HashMap::with_capacity(listed.len());
        for e in listed {
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
            return Ok(Box::new(SourceDir::new(self.ops.clone(), self.dir.clone())));
        }
        let name = name.as_bytes();
        match self.handle(name)? {
            Some((fh, m)) if m.kind == Kind::Dir => Ok(Box::new(SourceDir::new(
                self.ops.clone(),
                T::child(&self.dir, fh, name),
            ))),
            // Never through a symlink, as a local source is never.
            Some((_, m)) if m.kind == Kind::Symlink => {
                Err(io::Error::from_raw_os_error(libc::ELOOP))
            }
            Some(_) => Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
            None => Err(not_found()),
        }
    }

    fn open_file(&self, name: &OsStr, listed: &Meta) -> io::Result<Option<File>> {
        let name = name.as_bytes();
        let Some((fh, m)) = self.handle(name)? else {
            return Err(not_found());
        };
        if m.kind != Kind::File {
            return Ok(None);
        }
        let local = unnamed_local_file()?;
        let read = pipeline::read_into(
            self.ops.runtime(),
            self.ops.budget(),
            &local,
            listed.size,
            self.ops.read_size(),
            |off, len| self.ops.read(&fh, off, len),
        );
        let read = match read {
            Ok(read) => read,
            // The listing's handle went stale: the file was removed since. Gone by
            // name too, it vanished, as a local source's file would; replaced (a new
            // file renamed over it), nothing of what was listed was read, which the
            // check below reports as a change.
            Err(e) if e.raw_os_error() == Some(libc::ESTALE) => {
                match self.ops.find(&self.dir, name).map_err(to_io)? {
                    None => return Err(not_found()),
                    Some(_) => 0,
                }
            }
            Err(e) => return Err(to_io(e)),
        };
        // What the file is now, after the last byte: the copy compares it with the
        // listing, so a file that changed while it was read is reported and left
        // without the source's mtime.
        let now = match self.ops.find(&self.dir, name).map_err(to_io)? {
            Some((_, now)) => now,
            None => return Err(not_found()),
        };
        if now.size != read || read != listed.size || now.mtime != listed.mtime {
            // A size the listing cannot have: the copy's check fails however the
            // times compare.
            local.set_len(listed.size + 1)?;
        }
        let mtime = now.mtime;
        let t = rustix::fs::Timespec {
            tv_sec: mtime.sec,
            tv_nsec: mtime.nsec.into(),
        };
        let times = rustix::fs::Timestamps {
            last_access: t,
            last_modification: t,
        };
        rustix::fs::futimens(&local, &times)?;
        Ok(Some(local))
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

    fn open_file(&self, _: &OsStr, listed: &Meta) -> io::Result<Option<File>> {
        match &self.parent {
            Some(p) => p.open_file(&self.name, listed),
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
}
