//! The error type of the [`Destination`](super::Destination) seam.
//!
//! Whether a failure ends the run is decided by the backend that saw it, not guessed by
//! the engine from an `io::ErrorKind`: only the backend knows that an NFS call gave up
//! because the server stayed away, while a local `ETIMEDOUT` is one file's problem.

use std::io;

/// Why a destination call failed, and what that means for the run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// This entry could not be written or read; it is counted and the run goes on.
    #[error(transparent)]
    Entry(#[from] io::Error),
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

impl From<rustix::io::Errno> for Error {
    fn from(e: rustix::io::Errno) -> Error {
        Error::Entry(e.into())
    }
}

impl From<io::ErrorKind> for Error {
    fn from(k: io::ErrorKind) -> Error {
        Error::Entry(k.into())
    }
}
