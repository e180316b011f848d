//! Removing a whole directory tree on the mount path (a directory deleted, or one in
//! the way of a file), by descriptor.
//!
//! Its own module because it is the one recursive walk of the destination this backend
//! does, with rules of its own: symlinks met are removed and never followed, and
//! read-only directories are opened up first when not root.

use std::ffi::OsStr;
use std::io;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, Mode};

use super::LocalDir;
use crate::dest::Removal;
use crate::meta::Kind;

/// Removes `rel`'s last component in `parent` and everything below it, by descriptor,
/// so that a symlink met on the way (or swapped in meanwhile) is removed, never
/// followed. Without root, a read-only directory's entries cannot be unlinked, so such
/// directories are made writable first, as rsync does.
pub(super) fn remove_tree_at(
    parent: BorrowedFd<'_>,
    rel: &Path,
    each: &dyn Removal,
    root: bool,
) -> io::Result<bool> {
    let name = rel.file_name().unwrap_or(rel.as_os_str());
    let dir = match LocalDir::open(parent, name) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
        // Replaced by something else meanwhile: remove that.
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            if !each.may_remove(rel, Kind::File) {
                return Ok(false);
            }
            rustix::fs::unlinkat(parent, name, AtFlags::empty())?;
            each.removed(rel, Kind::File);
            return Ok(true);
        }
        Err(e) => return Err(e),
    };
    if !root {
        let m = rustix::fs::fstat(dir.fd())?;
        if m.st_mode & 0o700 != 0o700 {
            rustix::fs::fchmod(dir.fd(), Mode::from_raw_mode((m.st_mode | 0o700) & 0o7777))?;
        }
    }
    let mut all_gone = true;
    for e in rustix::fs::Dir::read_from(dir.fd())? {
        let e = e?;
        let child = OsStr::from_bytes(e.file_name().to_bytes());
        if child == "." || child == ".." {
            continue;
        }
        let kind = match e.file_type() {
            rustix::fs::FileType::Unknown => {
                match rustix::fs::statat(dir.fd(), child, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => Kind::from_raw_type(rustix::fs::FileType::from_raw_mode(st.st_mode)),
                    Err(rustix::io::Errno::NOENT) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
            t => Kind::from_raw_type(t),
        };
        let child_rel = rel.join(child);
        if kind == Kind::Dir {
            all_gone &= remove_tree_at(dir.fd(), &child_rel, each, root)?;
        } else if each.may_remove(&child_rel, kind) {
            match rustix::fs::unlinkat(dir.fd(), child, AtFlags::empty()) {
                Ok(()) => each.removed(&child_rel, kind),
                Err(rustix::io::Errno::NOENT) => {}
                Err(e) => return Err(e.into()),
            }
        } else {
            all_gone = false;
        }
    }
    drop(dir);
    if !all_gone || !each.may_remove(rel, Kind::Dir) {
        return Ok(false);
    }
    rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR)?;
    each.removed(rel, Kind::Dir);
    Ok(true)
}
