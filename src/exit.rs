//! Exit codes, in one place. They follow rsync's where rsync has the same situation,
//! so scripts that check rsync's codes keep working.

use std::fmt;

/// Everything was copied (or was already up to date).
pub const OK: i32 = 0;
/// Bad command line.
pub const USAGE: i32 = 1;
/// A source is missing or DEST cannot be used (rsync: "errors selecting input/output files, dirs").
pub const SELECT: i32 = 3;
/// The NFS server could not be reached or refused the export (rsync: "error in socket I/O").
pub const CONNECT: i32 = 10;
/// A fatal I/O error stopped the run midway (rsync: "error in file I/O").
pub const FILE_IO: i32 = 11;
/// Interrupted by SIGINT or SIGTERM; the summary was printed (rsync uses 20 too).
pub const INTERRUPTED: i32 = 20;
/// Some files could not be copied; the rest were (rsync: "partial transfer due to error").
pub const PARTIAL: i32 = 23;
/// Some source files vanished before they could be copied (rsync: "some files vanished").
pub const VANISHED: i32 = 24;
/// `--max-delete` stopped deletions; the rest of the run went on (rsync uses 25 too).
pub const DEL_LIMIT: i32 = 25;
/// The NFS server stopped answering within `--timeout` (rsync: "timeout in data send/receive").
pub const TIMEOUT: i32 = 30;

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
  30  NFS server timed out (--timeout)";

/// An error that ends the whole run, with the exit code it maps to.
#[derive(Debug)]
pub struct Fatal {
    /// Exit code from this module.
    pub code: i32,
    /// One line naming the path or server and the cause.
    pub message: String,
}

impl Fatal {
    /// Builds a fatal error.
    pub fn new(code: i32, message: impl Into<String>) -> Fatal {
        Fatal {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Fatal {}
