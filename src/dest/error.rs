//! The error type of the [`Destination`](super::Destination) seam.
//!
//! Whether a failure ends the run is decided where it is known, not guessed by the
//! engine: the NFS client builds [`Error::TimedOut`] and [`Error::Unreachable`] itself
//! when its server stays away, and an errno from the kernel is read here, once (on a
//! mounted NFS or EFS, `ETIMEDOUT` and `ENOTCONN` are the mount giving up on its server,
//! not one file's problem).

use std::io;

/// Why a destination call failed, and what that means for the run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// This entry could not be written or read; it is counted and the run goes on.
    #[error(transparent)]
    Entry(io::Error),
    /// The destination is gone for this run: the server refuses connections or keeps
    /// dropping them. Ends the run (exit 10).
    #[error("{0}")]
    Unreachable(#[source] io::Error),
    /// The server stopped answering within `--timeout`. Ends the run (exit 30).
    #[error("{0}")]
    TimedOut(#[source] io::Error),
}

/// A destination call's result.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The per-entry cause, `None` when the whole destination is gone.
    pub fn entry(&self) -> Option<&io::Error> {
        match self {
            Error::Entry(e) => Some(e),
            Error::Unreachable(_) | Error::TimedOut(_) => None,
        }
    }

    /// The kind of a per-entry cause (`Other` for the run-ending variants), for the
    /// engine's race rules: a name that appeared (`AlreadyExists`) or went (`NotFound`).
    pub fn kind(&self) -> io::ErrorKind {
        self.entry().map_or(io::ErrorKind::Other, io::Error::kind)
    }

    /// The errno of a per-entry cause.
    pub fn raw_os_error(&self) -> Option<i32> {
        self.entry().and_then(io::Error::raw_os_error)
    }

    /// Whether this error ends the run.
    pub fn is_fatal(&self) -> bool {
        self.entry().is_none()
    }
}

impl From<io::Error> for Error {
    /// A kernel's answer: a mount whose server timed out or whose transport is gone
    /// ends the run, anything else is the entry's.
    fn from(e: io::Error) -> Error {
        match e.kind() {
            io::ErrorKind::TimedOut => Error::TimedOut(e),
            io::ErrorKind::NotConnected
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionRefused => Error::Unreachable(e),
            _ => Error::Entry(e),
        }
    }
}

impl From<rustix::io::Errno> for Error {
    fn from(e: rustix::io::Errno) -> Error {
        io::Error::from(e).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_errno_says_whether_the_mount_is_gone() {
        let of = |errno| Error::from(io::Error::from_raw_os_error(errno));
        assert!(matches!(of(libc::ETIMEDOUT), Error::TimedOut(_)));
        assert!(matches!(of(libc::ENOTCONN), Error::Unreachable(_)));
        for errno in [
            libc::ENOSPC,
            libc::EACCES,
            libc::ENOENT,
            libc::EIO,
            libc::ESTALE,
        ] {
            let e = of(errno);
            assert!(!e.is_fatal(), "{e:?}");
            assert_eq!(e.raw_os_error(), Some(errno));
        }
    }
}
