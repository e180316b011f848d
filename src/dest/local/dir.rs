//! An open destination directory: every call below DEST names its target relative to
//! one of these, never by a path resolved again.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};

use crate::options::trust::Trust;

/// How a destination directory is opened: never through a symlink.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// An open destination directory. Cloning shares the descriptor.
#[derive(Clone, Debug)]
pub struct LocalDir {
    pub(super) fd: Arc<OwnedFd>,
    /// The directory has its setgid bit, so what is created in it takes its group
    /// rather than ours (and a new directory takes the bit too).
    pub(super) setgid: bool,
}

impl LocalDir {
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    pub(super) fn new(fd: OwnedFd) -> LocalDir {
        LocalDir {
            fd: Arc::new(fd),
            setgid: false,
        }
    }

    /// Opens `name` in `parent` as a directory, refusing a symlink (`ENOTDIR`, as for
    /// anything else that is not a directory).
    pub(super) fn open(parent: BorrowedFd<'_>, name: &OsStr) -> io::Result<LocalDir> {
        match rustix::fs::openat(parent, name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => Ok(LocalDir::new(fd)),
            Err(rustix::io::Errno::LOOP) => Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens a directory by path, following the symlinks root or we own (see
    /// `options::trust`): only for DEST itself and its parent, which the user named.
    pub(super) fn open_path(trust: Trust, path: &Path) -> io::Result<LocalDir> {
        let d = LocalDir::new(crate::options::trust::open_dir(
            trust,
            rustix::fs::CWD,
            path,
            false,
        )?);
        let mode = rustix::fs::fstat(d.fd())?.st_mode;
        Ok(LocalDir {
            setgid: mode & 0o2000 != 0,
            ..d
        })
    }
}
