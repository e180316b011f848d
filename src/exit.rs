//! Exit codes, in one place. They follow rsync's where rsync has the same situation,
//! so scripts that check rsync's codes keep working.

use std::io;
use std::path::PathBuf;

use crate::dest;

/// How a run ended, as the process exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExitCode {
    /// Everything was copied (or was already up to date).
    Success = 0,
    /// Bad command line.
    Usage = 1,
    /// A source is missing or DEST cannot be used (rsync: "errors selecting input/output
    /// files, dirs").
    Select = 3,
    /// The NFS server could not be reached or refused the export (rsync: "error in
    /// socket I/O").
    Connect = 10,
    /// A fatal I/O error stopped the run midway (rsync: "error in file I/O").
    FileIo = 11,
    /// Interrupted by SIGINT or SIGTERM; the summary was printed (rsync uses 20 too).
    Interrupted = 20,
    /// Some files could not be copied; the rest were (rsync: "partial transfer due to
    /// error").
    Partial = 23,
    /// Some source files vanished before they could be copied (rsync: "some files
    /// vanished").
    Vanished = 24,
    /// `--max-delete` stopped deletions; the rest of the run went on (rsync uses 25 too).
    DelLimit = 25,
    /// The NFS server stopped answering within `--timeout` (rsync: "timeout in data
    /// send/receive").
    Timeout = 30,
    /// A bug: a job panicked, and the run stopped as after a fatal error. rsync has no
    /// such code; 101 is what a Rust program exits with when a panic ends it.
    Internal = 101,
}

impl ExitCode {
    /// The number the process exits with.
    pub fn code(self) -> i32 {
        self as i32
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(c: ExitCode) -> Self {
        std::process::ExitCode::from(c as u8)
    }
}

impl serde::Serialize for ExitCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i32(self.code())
    }
}

/// The table printed in `--help` and README.
pub const TABLE: &str = "\
Exit codes:
   0  success
   1  usage error
   3  a source is missing or DEST is unusable (e.g. a regular file where a directory is needed)
  10  NFS server unreachable, or MOUNT refused
  11  fatal I/O error on the destination
  20  interrupted (SIGINT/SIGTERM); in-flight files were finished or left detectably partial
  23  partial transfer: some files failed (each printed with its path and cause)
  24  some source files vanished during the run
  25  --max-delete stopped deletions (the rest of the sync was done)
  30  NFS server timed out (--timeout)
 101  internal error: a job panicked (a bug); in-flight files were finished, the summary printed";

/// An error that ends the whole run. Per-entry failures never become one: they are
/// printed, counted, and the run goes on (exit 23).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The command line (or the `nfs://` URL in it) cannot be used.
    #[error("{0}")]
    Usage(String),
    /// A source or DEST cannot be looked at.
    #[error("{}: {source}", path.display())]
    Select {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A source or DEST is the wrong kind of thing for the command.
    #[error("{}: {why}", path.display())]
    Unusable { path: PathBuf, why: String },
    /// The NFS server cannot be reached, or refused us, while setting up.
    #[error("{0}")]
    Connect(String),
    /// The NFS server did not answer within `--timeout` while setting up.
    #[error("{0}")]
    Timeout(String),
    /// The destination went away mid-run (see [`dest::Error`]).
    #[error("{}: {source}", path.display())]
    Dest {
        path: PathBuf,
        #[source]
        source: dest::Error,
    },
    /// A job panicked: a bug in nfsync, reported with the entry it was working on.
    #[error("{}: internal error (please report it): {message}", path.display())]
    Panic { path: PathBuf, message: String },
    /// A local failure outside any file (starting threads, writing output).
    #[error("{what}: {source}")]
    Local {
        what: String,
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// The exit code this error ends the run with: the one mapping from errors to codes.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Usage(_) => ExitCode::Usage,
            Error::Select { .. } | Error::Unusable { .. } => ExitCode::Select,
            Error::Connect(_) => ExitCode::Connect,
            Error::Timeout(_) => ExitCode::Timeout,
            Error::Dest { source, .. } => match source {
                dest::Error::Unreachable(_) => ExitCode::Connect,
                dest::Error::TimedOut(_) => ExitCode::Timeout,
                dest::Error::Entry(_) => ExitCode::FileIo,
            },
            Error::Local { .. } => ExitCode::FileIo,
            Error::Panic { .. } => ExitCode::Internal,
        }
    }
}

/// Adds advice to a set-up error's message (what to change in the URL or on the server).
pub fn with_hint(mut e: Error, hint: &str) -> Error {
    if let Error::Connect(m) | Error::Timeout(m) | Error::Usage(m) = &mut e {
        m.push_str(hint);
    }
    e
}
