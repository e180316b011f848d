//! Exit codes and the errors that end a run, in one place. The codes follow rsync's
//! where rsync has the same situation, so scripts that check rsync's codes keep working.
//!
//! Each code's meaning is written once, in the `exit_codes!` table below: the enum's
//! docs, `--help`, the man page and README's "Exit codes" table are all that text (a
//! test compares README with it).

use std::io;
use std::path::PathBuf;

use crate::dest;

/// Builds [`ExitCode`] from one table of `Name = code, "meaning"`: the meaning is the
/// variant's first doc line and its row in [`table`], the doc lines above it say where
/// it comes from.
macro_rules! exit_codes {
    ($($(#[doc = $doc:literal])* $name:ident = $code:literal, $meaning:literal;)*) => {
        /// How a run ended, as the process exit status.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
        pub enum ExitCode {
            $(#[doc = $meaning] #[doc = ""] $(#[doc = $doc])* $name = $code,)*
        }

        impl ExitCode {
            /// Every code, lowest first.
            pub const ALL: &[ExitCode] = &[$(ExitCode::$name),*];

            /// What the code tells the caller, as `--help` and README say it.
            pub fn meaning(self) -> &'static str {
                match self {
                    $(ExitCode::$name => $meaning,)*
                }
            }
        }
    };
}

exit_codes! {
    /// Everything was copied (or was already up to date).
    Success = 0, "success";
    /// clap's own errors, `--temp-dir` that does not exist, `--shard slurm` without
    /// its variables, `--mpi` without MPI.
    Usage = 1, "usage error: an option, its value or the nfs:// URL cannot be used";
    /// rsync: "errors selecting input/output files, dirs".
    Select = 3, "a source is missing or DEST is unusable (e.g. a regular file where a directory is needed)";
    /// Name lookup, portmapper, MOUNT, the NFSv4.1 session or TLS while setting up;
    /// connections that keep failing midway. rsync: "error in socket I/O".
    Connect = 10, "NFS server unreachable or refusing us (MOUNT, NFSv4.1 session, TLS), at start or midway";
    /// A failure outside any one file (a file's own error is 23). rsync: "error in file
    /// I/O".
    FileIo = 11, "fatal local I/O error (no worker thread could start, output could not be written)";
    /// rsync uses 20 too. The second signal leaves the files in flight partial, which
    /// the next run finds (README, "The resume guarantee").
    Interrupted = 20, "interrupted (SIGINT/SIGTERM): in-flight files finished, summary printed; 2nd signal: at once";
    /// rsync: "partial transfer due to error".
    Partial = 23, "partial transfer: some files failed (each printed with its path and cause), the rest copied";
    /// rsync: "some files vanished".
    Vanished = 24, "some source files vanished during the run";
    /// rsync uses 25 too.
    DelLimit = 25, "--max-delete stopped deletions (the rest of the sync went on)";
    /// rsync: "timeout in data send/receive".
    Timeout = 30, "NFS server timed out (--timeout), at the start or midway";
}

impl ExitCode {
    /// The number the process exits with.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The code numbered `code`, if there is one.
    pub fn from_code(code: i32) -> Option<ExitCode> {
        Self::ALL.iter().copied().find(|c| c.code() == code)
    }

    /// The code of a run that ended without a run-ending [`Error`] (that error's code
    /// wins over all of these). When several apply, the one that most needs the user's
    /// attention is chosen: an interrupted run is unfinished whatever else happened;
    /// deletions stopped by `--max-delete` may mean the source came up empty, which
    /// must not hide behind a file's error; a failed file is worse than one that
    /// vanished, which the next run would not copy either.
    pub fn of_run(end: RunEnd) -> ExitCode {
        if end.interrupted {
            ExitCode::Interrupted
        } else if end.deletes_skipped > 0 {
            ExitCode::DelLimit
        } else if end.errors > 0 {
            ExitCode::Partial
        } else if end.vanished > 0 {
            ExitCode::Vanished
        } else {
            ExitCode::Success
        }
    }
}

/// What a finished run's code is picked from (see [`ExitCode::of_run`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct RunEnd {
    /// SIGINT or SIGTERM stopped it.
    pub interrupted: bool,
    /// Deletions `--max-delete` did not make.
    pub deletes_skipped: u64,
    /// Entries that failed.
    pub errors: u64,
    /// Source entries that vanished before they were copied.
    pub vanished: u64,
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

/// The table printed after `--help` (and so in the man page).
pub fn table() -> String {
    let mut t = String::from("Exit codes:");
    for c in ExitCode::ALL {
        t += &format!("\n{:>4}  {}", c.code(), c.meaning());
    }
    t
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_code_follows_the_precedence_interrupted_dellimit_partial_vanished() {
        let all = RunEnd {
            interrupted: true,
            deletes_skipped: 1,
            errors: 1,
            vanished: 1,
        };
        assert_eq!(ExitCode::of_run(all), ExitCode::Interrupted);
        let no_signal = RunEnd {
            interrupted: false,
            ..all
        };
        assert_eq!(ExitCode::of_run(no_signal), ExitCode::DelLimit);
        let all_deleted = RunEnd {
            deletes_skipped: 0,
            ..no_signal
        };
        assert_eq!(ExitCode::of_run(all_deleted), ExitCode::Partial);
        let no_error = RunEnd {
            errors: 0,
            ..all_deleted
        };
        assert_eq!(ExitCode::of_run(no_error), ExitCode::Vanished);
        assert_eq!(ExitCode::of_run(RunEnd::default()), ExitCode::Success);
        // Each alone gives its own code.
        let none = RunEnd::default();
        let alone = [
            (
                RunEnd {
                    interrupted: true,
                    ..none
                },
                ExitCode::Interrupted,
            ),
            (
                RunEnd {
                    deletes_skipped: 2,
                    ..none
                },
                ExitCode::DelLimit,
            ),
            (RunEnd { errors: 3, ..none }, ExitCode::Partial),
            (
                RunEnd {
                    vanished: 4,
                    ..none
                },
                ExitCode::Vanished,
            ),
        ];
        for (end, code) in alone {
            assert_eq!(ExitCode::of_run(end), code, "{end:?}");
        }
    }

    #[test]
    fn codes_are_listed_once_in_increasing_order() {
        let codes: Vec<i32> = ExitCode::ALL.iter().map(|c| c.code()).collect();
        assert!(codes.windows(2).all(|w| w[0] < w[1]), "{codes:?}");
        for c in ExitCode::ALL {
            assert_eq!(ExitCode::from_code(c.code()), Some(*c));
        }
        assert_eq!(ExitCode::from_code(2), None);
    }

    /// README's "Exit codes" table, row by row: the code and its meaning.
    fn readme_rows() -> Vec<(i32, String)> {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
            .expect("README.md");
        let section = readme
            .split("\n## Exit codes\n")
            .nth(1)
            .expect("README has an \"## Exit codes\" section");
        let section = section.split("\n## ").next().unwrap_or(section);
        section
            .lines()
            .filter_map(|l| l.strip_prefix('|')?.strip_suffix('|'))
            .filter_map(|row| {
                let (code, meaning) = row.split_once('|')?;
                Some((code.trim().parse().ok()?, meaning.trim().to_string()))
            })
            .collect()
    }

    #[test]
    fn readme_exit_code_table_is_the_code_table() {
        let want: Vec<(i32, String)> = ExitCode::ALL
            .iter()
            .map(|c| (c.code(), c.meaning().to_string()))
            .collect();
        assert_eq!(
            readme_rows(),
            want,
            "README.md's \"Exit codes\" table must list exactly exit::ExitCode's codes and meanings"
        );
    }

    #[test]
    fn help_lists_every_code_with_its_meaning() {
        let t = table();
        assert!(t.starts_with("Exit codes:\n   0  success\n"), "{t}");
        assert!(
            t.ends_with(&format!("\n  30  {}", ExitCode::Timeout.meaning())),
            "{t}"
        );
        assert_eq!(t.lines().count(), ExitCode::ALL.len() + 1);
    }
}
