//! Exit codes and the errors that end a run, in one place. The codes follow rsync's
//! where rsync has the same situation, so scripts that check rsync's codes keep working.
//!
//! Each code's meaning is written once, in the `exit_codes!` table below: the enum's
//! docs, `--help`, the man page and README's "Exit codes" table are all that text (a
//! test compares README with it).

use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::dest;
use crate::report::Escaped;

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
    /// midway, every connection closed or refused for `--timeout` (the server is not
    /// running). rsync: "error in socket I/O".
    Connect = 10, "NFS server unreachable or refusing us (MOUNT, NFSv4.1 session, TLS) at the start, or refusing every connection for --timeout midway";
    /// A failure outside any one file (a file's own error is 23). rsync: "error in file
    /// I/O". As in rsync, also a rules file a rule names that cannot be opened, and
    /// merge files nested more than 32 deep.
    FileIo = 11, "fatal local I/O error (no worker thread could start, output could not be written)";
    /// rsync uses 20 too. The second signal, or work still in flight 5 s after the
    /// first, leaves the files in flight partial, which the next run finds (README,
    /// "The resume guarantee").
    Interrupted = 20, "interrupted (SIGINT/SIGTERM): copies in flight stop between pieces, their partial files removed (5 s at most), summary printed; 2nd signal: at once";
    /// rsync: "partial transfer due to error".
    Partial = 23, "partial transfer: some files failed (each printed with its path and cause), the rest copied";
    /// rsync: "some files vanished".
    Vanished = 24, "some source files vanished during the run";
    /// rsync uses 25 too.
    DelLimit = 25, "--max-delete stopped deletions (the rest of the sync went on)";
    /// Nothing from the server for `--timeout`, on any connection, though they were
    /// open (a stopped or hung server): the run ends then, whatever the connections
    /// and jobs. rsync: "timeout in data send/receive", which its --stop-at and
    /// --stop-after end with too.
    Timeout = 30, "NFS server silent for --timeout (stopped, hung), at the start or midway; or --stop-at/--stop-after reached";
    /// A bug: a job panicked, and the run stopped as after a fatal error. rsync has no
    /// such code; 101 is what a Rust program exits with when a panic ends it.
    Internal = 101, "internal error: a job panicked (a bug); in-flight files finished, summary printed";
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

    /// The code of several runs that each ended with one of `codes` (MPI ranks and
    /// their finalize run): a run-ending error's code first (the highest, if several),
    /// then [`ExitCode::of_run`]'s order, so ranks that ended 20 and 23 give 20, as one
    /// run with both would.
    pub fn worst(codes: impl IntoIterator<Item = ExitCode>) -> ExitCode {
        codes
            .into_iter()
            .max_by_key(|c| c.severity())
            .unwrap_or(ExitCode::Success)
    }

    /// Where the code stands in [`ExitCode::worst`]'s order (higher: reported first).
    pub fn severity(self) -> u32 {
        match self {
            ExitCode::Success => 0,
            ExitCode::Vanished => 1,
            ExitCode::Partial => 2,
            ExitCode::DelLimit => 3,
            ExitCode::Interrupted => 4,
            ended => 1000 + ended.code() as u32,
        }
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

/// Any error, kept as the cause of a run-ending one.
pub type Cause = Box<dyn StdError + Send + Sync + 'static>;

/// An error that ends the whole run. Per-entry failures never become one: they are
/// printed, counted, and the run goes on (exit 23).
///
/// Like `anyhow::Error`, `{}` shows only this error's own words and `{:#}` the whole
/// chain, "context: cause: cause", then the hint if there is one; that is what the user
/// reads. Its causes stay reachable through [`std::error::Error::source`]. Its paths
/// are [`Escaped`]; the rest (a server's words among its causes) is escaped where it
/// is printed.
#[derive(Debug)]
pub enum Error {
    /// The command line (or the `nfs://` URL in it) cannot be used.
    Usage(Why),
    /// A source or DEST cannot be looked at.
    Select { path: PathBuf, source: io::Error },
    /// A source or DEST is the wrong kind of thing for the command.
    Unusable { path: PathBuf, why: String },
    /// The NFS server cannot be reached, or refused us, while setting up.
    Connect(Why),
    /// The NFS server did not answer within `--timeout` while setting up.
    Timeout(Why),
    /// The destination went away mid-run (see [`dest::Error`]).
    Dest { path: PathBuf, source: dest::Error },
    /// A local failure outside any file (starting threads, writing output).
    Local { what: String, source: io::Error },
    /// A job panicked: a bug in nfsync, reported with the entry it was working on.
    Panic { path: PathBuf, message: String },
}

/// The words of a [`Error::Usage`], [`Error::Connect`] or [`Error::Timeout`]: what
/// could not be done, the error underneath (with its own causes), and advice on what to
/// change, which is printed after the causes.
#[derive(Debug)]
pub struct Why {
    /// `None`: the cause's own words lead (the error is the cause, nothing to add).
    what: Option<String>,
    source: Option<Cause>,
    hint: String,
}

impl Why {
    /// What could not be done; [`Why::because`] adds what stopped it.
    pub fn new(what: impl Into<String>) -> Why {
        Why {
            what: Some(what.into()),
            source: None,
            hint: String::new(),
        }
    }

    /// An error that says it all by itself.
    pub fn of(source: impl Into<Cause>) -> Why {
        Why {
            what: None,
            source: Some(source.into()),
            hint: String::new(),
        }
    }

    /// The error that stopped it, printed after the words (with its causes) by `{:#}`.
    pub fn because(mut self, source: impl Into<Cause>) -> Why {
        self.source = Some(source.into());
        self
    }
}

impl From<String> for Why {
    fn from(what: String) -> Why {
        Why::new(what)
    }
}

impl From<&str> for Why {
    fn from(what: &str) -> Why {
        Why::new(what)
    }
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

    /// Adds advice (what to change in the URL or on the server) to a set-up error; it is
    /// printed after the causes, and starts with its own separator (`": "`, `"; "`,
    /// `" ("`). Other errors are returned as they are.
    pub fn with_hint(mut self, hint: &str) -> Error {
        if let Error::Usage(w) | Error::Connect(w) | Error::Timeout(w) = &mut self {
            w.hint.push_str(hint);
        }
        self
    }

    fn why(&self) -> Option<&Why> {
        match self {
            Error::Usage(w) | Error::Connect(w) | Error::Timeout(w) => Some(w),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            write_chain(f, self)?;
            return f.write_str(self.why().map_or("", |w| &w.hint));
        }
        match self {
            Error::Usage(w) | Error::Connect(w) | Error::Timeout(w) => match (&w.what, &w.source) {
                (Some(what), _) => f.write_str(what),
                (None, Some(source)) => source.fmt(f),
                (None, None) => Ok(()),
            },
            Error::Select { path, .. } | Error::Dest { path, .. } => {
                write!(f, "{}", Escaped(path))
            }
            Error::Unusable { path, why } => write!(f, "{}: {why}", Escaped(path)),
            Error::Local { what, .. } => f.write_str(what),
            Error::Panic { path, message } => write!(
                f,
                "{}: internal error (please report it): {message}",
                Escaped(path)
            ),
        }
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Error::Usage(w) | Error::Connect(w) | Error::Timeout(w) => match (&w.what, &w.source) {
                (Some(_), Some(source)) => Some(source.as_ref()),
                // The cause stands in for the words, so the chain goes on below it.
                (None, Some(source)) => source.source(),
                (_, None) => None,
            },
            Error::Select { source, .. } | Error::Local { source, .. } => Some(source),
            Error::Dest { source, .. } => Some(source),
            Error::Unusable { .. } | Error::Panic { .. } => None,
        }
    }
}

/// `top` and its causes, "context: cause: cause", as `anyhow`'s `{:#}` writes them, but
/// no error's words twice: one whose words end with its cause's (a `"{addr}: {source}"`
/// format) is cut back to what it adds, and a cause whose words are already printed (an
/// `io::Error` holding another error's message, advice after a cause) is left out.
/// `snafu`'s `Report` cuts such suffixes the same way: errors written in either style
/// (cause in the words or only in `source`) print alike.
fn write_chain(f: &mut fmt::Formatter<'_>, top: &(dyn StdError + 'static)) -> fmt::Result {
    let mut printed = String::new();
    let mut next = Some(top);
    while let Some(e) = next {
        next = e.source();
        let text = e.to_string();
        let below = next.map(ToString::to_string).unwrap_or_default();
        let own = match text.strip_suffix(below.as_str()) {
            Some(head) if !below.is_empty() => head.trim_end_matches([':', ' ']),
            _ => &text,
        };
        if own.is_empty() || printed.contains(own) {
            continue;
        }
        if !printed.is_empty() {
            printed.push_str(": ");
        }
        printed.push_str(own);
    }
    f.write_str(&printed)
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
    fn several_runs_report_an_ending_error_then_the_run_precedence() {
        use ExitCode::*;
        assert_eq!(ExitCode::worst([Partial, Interrupted]), Interrupted);
        assert_eq!(ExitCode::worst([Partial, DelLimit, Vanished]), DelLimit);
        assert_eq!(ExitCode::worst([Vanished, Success, Partial]), Partial);
        assert_eq!(ExitCode::worst([Interrupted, Connect, Timeout]), Timeout);
        assert_eq!(ExitCode::worst([Internal, Usage]), Internal);
        assert_eq!(ExitCode::worst([]), Success);
        for c in ExitCode::ALL {
            let by_severity = ExitCode::ALL.iter().find(|o| o.severity() == c.severity());
            assert_eq!(by_severity, Some(c), "two codes share a severity");
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
            t.ends_with(&format!("\n 101  {}", ExitCode::Internal.meaning())),
            "{t}"
        );
        assert_eq!(t.lines().count(), ExitCode::ALL.len() + 1);
    }

    #[derive(Debug, thiserror::Error)]
    #[error("cannot connect to {addr}: {source}")]
    struct Repeats {
        addr: &'static str,
        source: io::Error,
    }

    #[test]
    fn alternate_display_is_the_chain_then_the_hint() {
        let refused = || io::Error::from(io::ErrorKind::ConnectionRefused);
        let e = Error::Connect(Why::new("portmapper at h:111").because(refused()))
            .with_hint("; give the ports in the URL");
        assert_eq!(e.to_string(), "portmapper at h:111");
        assert_eq!(
            format!("{e:#}"),
            format!(
                "portmapper at h:111: {}; give the ports in the URL",
                refused()
            )
        );
        assert!(e.source().unwrap().downcast_ref::<io::Error>().is_some());
        // A cause whose words already hold its own cause prints that cause once.
        let e = Error::Connect(Why::new("NFS service").because(Repeats {
            addr: "h:2049",
            source: refused(),
        }));
        assert_eq!(
            format!("{e:#}"),
            format!("NFS service: cannot connect to h:2049: {}", refused())
        );
        // So does a dest::Error that shows its io::Error's words as its own.
        let e = Error::Dest {
            path: "/d".into(),
            source: dest::Error::Unreachable(io::Error::other(Repeats {
                addr: "h:2049",
                source: refused(),
            })),
        };
        assert_eq!(
            format!("{e:#}"),
            format!("/d: cannot connect to h:2049: {}", refused())
        );
    }

    #[derive(Debug, thiserror::Error)]
    #[error("{source}; try ?tls-ca=FILE")]
    struct AdviceAfter {
        source: io::Error,
    }

    #[test]
    fn a_cause_already_in_its_parents_words_is_not_printed_again() {
        let e = Error::Connect(Why::new("NFS service").because(AdviceAfter {
            source: io::Error::other("UnknownIssuer"),
        }));
        assert_eq!(
            format!("{e:#}"),
            "NFS service: UnknownIssuer; try ?tls-ca=FILE"
        );
    }

    #[test]
    fn an_error_that_says_it_all_leads_its_chain() {
        let inner = anyhow::anyhow!("bad value").context("--chmod");
        let e = Error::Usage(Why::of(inner));
        assert_eq!(e.to_string(), "--chmod");
        assert_eq!(format!("{e:#}"), "--chmod: bad value");
        let e = Error::Usage("--mpi: MPI could not be initialized".into());
        assert_eq!(format!("{e:#}"), e.to_string());
        assert!(e.source().is_none());
    }

    #[test]
    fn select_and_local_errors_read_as_before() {
        let e = Error::Select {
            path: "/src".into(),
            source: io::Error::from_raw_os_error(libc::ENOENT),
        };
        assert_eq!(
            format!("{e:#}"),
            format!("/src: {}", io::Error::from_raw_os_error(libc::ENOENT))
        );
        let e = Error::Unusable {
            path: "/d".into(),
            why: "not a directory".into(),
        };
        assert_eq!(format!("{e:#}"), "/d: not a directory");
    }
}
