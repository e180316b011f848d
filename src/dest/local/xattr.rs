//! The mount path's extended attributes (`-X`, `-A`) and `-K`'s followed symlinks.
//!
//! Linux has no `*xattrat` calls before 6.13, so an entry is named through its open
//! directory as `/proc/self/fd/N/NAME` with the `l*` calls: the directory is the one
//! held open (no path resolved again from DEST) and the entry itself is never
//! followed. A directory's own attributes go through its descriptor.

use std::ffi::OsStr;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

use super::{LocalDest, LocalDir};
use crate::dest;
use crate::dest::Destination;
use crate::meta::{Kind, Meta};
use crate::options::xattrs::{self, Target, XattrSet, Xattrs};

/// The permission bits the default ACL of the directory `t` lets new entries keep;
/// `None` when it has none (or the filesystem holds no ACLs).
pub(super) fn default_perms(t: Target<'_>) -> Option<u32> {
    let mut buf = [0u8; 1024];
    let name = "system.posix_acl_default";
    let n = match t {
        Target::Path(p) => rustix::fs::getxattr(p, name, &mut buf),
        Target::Fd(fd) => rustix::fs::fgetxattr(fd, name, &mut buf),
    }
    .ok()?;
    xattrs::default_acl_perms(&buf[..n])
}

/// `name` in `dir`, as a path the kernel resolves through the open descriptor.
pub(super) fn entry_path(dir: &LocalDir, name: &OsStr) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", dir.fd().as_raw_fd())).join(name)
}

impl LocalDest {
    pub(super) fn read_xattrs(
        &self,
        dir: &LocalDir,
        name: Option<&OsStr>,
        set: XattrSet,
    ) -> dest::Result<Xattrs> {
        let r = match name {
            Some(n) => xattrs::read(Target::Path(&entry_path(dir, n)), set),
            None => xattrs::read(Target::Fd(dir.fd()), set),
        };
        r.map_err(unsupported_as_such)
    }

    pub(super) fn write_xattrs(
        &self,
        dir: &LocalDir,
        name: Option<&OsStr>,
        have: &Xattrs,
        want: &Xattrs,
    ) -> dest::Result<()> {
        let r = match name {
            Some(n) => xattrs::write(Target::Path(&entry_path(dir, n)), have, want),
            None => xattrs::write(Target::Fd(dir.fd()), have, want),
        };
        r.map_err(unsupported_as_such)
    }

    /// `-K`: opens what the symlink `name` points to when it is a directory. A link
    /// owned by someone else than us or root is not followed (someone else could
    /// point it anywhere): refused with `EPERM`. The link is followed from DEST's top
    /// by its path `rel` without leaving DEST (`RESOLVE_BENEATH`: no absolute target,
    /// no `..` above the top, as rsync 3.5's resolver): one leading out is refused
    /// with rsync's `ELOOP`.
    pub(super) fn follow_dir_link(
        &self,
        dir: &LocalDir,
        name: &OsStr,
        rel: &Path,
    ) -> dest::Result<Option<(LocalDir, Meta)>> {
        let link = rustix::fs::statat(dir.fd(), name, AtFlags::SYMLINK_NOFOLLOW)?;
        if link.st_uid != 0 && link.st_uid != self.euid {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "-K: not following a symlink owned by uid {} (neither root nor us)",
                    link.st_uid
                ),
            )
            .into());
        }
        let top = self.root_dir()?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd =
            match rustix::fs::openat2(top.fd(), rel, flags, Mode::empty(), ResolveFlags::BENEATH) {
                Ok(fd) => fd,
                Err(
                    rustix::io::Errno::NOTDIR | rustix::io::Errno::NOENT | rustix::io::Errno::LOOP,
                ) => {
                    return Ok(None);
                }
                Err(rustix::io::Errno::XDEV) => return Err(rustix::io::Errno::LOOP.into()),
                Err(e) => return Err(e.into()),
            };
        let meta = Meta::from_stat(&rustix::fs::fstat(&fd)?);
        debug_assert_eq!(meta.kind, Kind::Dir);
        let d = LocalDir {
            setgid: meta.mode & 0o2000 != 0,
            ..LocalDir::new(fd)
        };
        Ok(Some((d, meta)))
    }
}

/// `ENOTSUP` as `ErrorKind::Unsupported`, which the engine reports once per run.
fn unsupported_as_such(e: io::Error) -> dest::Error {
    if xattrs::is_unsupported(&e) {
        dest::Error::Entry(io::Error::new(io::ErrorKind::Unsupported, e))
    } else {
        e.into()
    }
}
