//! Counting what happened and telling the user: per-file messages, itemized changes,
//! and the end-of-run summary (one line, `--stats`, or `--json`).
//!
//! Counters are atomics bumped by every worker; messages go through [`Output`], which
//! knows about the progress bar so a line never tears it.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::Serialize;

use crate::exit::ExitCode;
use crate::tune::TuneReport;

/// Live counters, shared by all workers.
#[derive(Default, Debug)]
pub struct Stats {
    /// Non-directory source entries seen.
    pub files_scanned: AtomicU64,
    /// Source directories seen.
    pub dirs_scanned: AtomicU64,
    /// Bytes of regular files seen.
    pub bytes_scanned: AtomicU64,
    /// Regular files whose content was written.
    pub files_copied: AtomicU64,
    /// Symlinks, hard links and special files created.
    pub links_created: AtomicU64,
    /// Entries already up to date.
    pub files_skipped: AtomicU64,
    /// Entries whose attributes only were fixed.
    pub attrs_updated: AtomicU64,
    /// Destination entries removed (`--delete`, or in the way of another type).
    pub files_deleted: AtomicU64,
    /// Directories created.
    pub dirs_created: AtomicU64,
    /// Bytes written.
    pub bytes_copied: AtomicU64,
    /// Entries that failed (each printed).
    pub errors: AtomicU64,
    /// Source entries that vanished during the run.
    pub vanished: AtomicU64,
    /// Special files skipped for lack of `--specials`/`--devices`.
    pub specials_skipped: AtomicU64,
    /// Deletions `--max-delete` did not allow.
    pub deletes_skipped: AtomicU64,
    /// Entries given the nearest time the destination can store instead of their own.
    pub times_clamped: AtomicU64,
}

impl Stats {
    /// Adds one to a counter.
    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Relaxed);
    }
}

/// The end-of-run totals, as printed by `--json`.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub files_scanned: u64,
    pub dirs_scanned: u64,
    pub bytes_scanned: u64,
    pub files_copied: u64,
    pub links_created: u64,
    pub files_skipped: u64,
    pub attrs_updated: u64,
    pub files_deleted: u64,
    pub dirs_created: u64,
    pub bytes_copied: u64,
    pub errors: u64,
    pub vanished: u64,
    pub specials_skipped: u64,
    pub times_clamped: u64,
    pub deletes_skipped: u64,
    pub elapsed_s: f64,
    /// Concurrency at the end of the run (the fixed value with `--jobs N`).
    pub jobs: usize,
    pub jobs_initial: usize,
    pub jobs_final: usize,
    pub jobs_max: usize,
    /// Controller decisions: (seconds since start, jobs).
    pub jobs_history: Vec<(f64, usize)>,
    pub dry_run: bool,
    pub interrupted: bool,
    pub exit_code: ExitCode,
    /// The NFS version spoken ("3" or "4.1"; absent on the mount path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nfs_version: Option<&'static str>,
    /// NFS calls sent (procedures on NFSv3, COMPOUNDs on NFSv4.1), retries included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpcs: Option<u64>,
    /// Why the run stopped early (exit 10, 11 or 30), so scripts see how far it got.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fatal: Option<String>,
}

impl Summary {
    /// Snapshot of the counters.
    pub fn new(s: &Stats, elapsed_s: f64, tune: TuneReport, dry_run: bool) -> Summary {
        let g = |c: &AtomicU64| c.load(Relaxed);
        Summary {
            files_scanned: g(&s.files_scanned),
            dirs_scanned: g(&s.dirs_scanned),
            bytes_scanned: g(&s.bytes_scanned),
            files_copied: g(&s.files_copied),
            links_created: g(&s.links_created),
            files_skipped: g(&s.files_skipped),
            attrs_updated: g(&s.attrs_updated),
            files_deleted: g(&s.files_deleted),
            dirs_created: g(&s.dirs_created),
            bytes_copied: g(&s.bytes_copied),
            errors: g(&s.errors),
            vanished: g(&s.vanished),
            specials_skipped: g(&s.specials_skipped),
            times_clamped: g(&s.times_clamped),
            deletes_skipped: g(&s.deletes_skipped),
            elapsed_s,
            jobs: tune.final_jobs,
            jobs_initial: tune.initial,
            jobs_final: tune.final_jobs,
            jobs_max: tune.max,
            jobs_history: tune.history,
            dry_run,
            interrupted: false,
            exit_code: ExitCode::Success,
            nfs_version: None,
            rpcs: None,
            fatal: None,
        }
    }

    /// The summary of a run that ended before it copied anything (the server could not
    /// be reached, DEST is unusable): zero counts, the exit code and why.
    pub fn failed(f: &crate::exit::Error, dry_run: bool) -> Summary {
        Summary {
            exit_code: f.exit_code(),
            fatal: Some(f.to_string()),
            ..Summary::new(&Stats::default(), 0.0, TuneReport::default(), dry_run)
        }
    }

    /// The one-line summary printed at the end unless `-q`.
    pub fn one_line(&self) -> String {
        let secs = self.elapsed_s.max(1e-9);
        format!(
            "{} files copied ({}), {} up to date, {} deleted, {} dirs created, {} errors in {:.2}s ({:.0} files/s, jobs {}){}",
            self.files_copied + self.links_created,
            indicatif::HumanBytes(self.bytes_copied),
            self.files_skipped + self.attrs_updated,
            self.files_deleted,
            self.dirs_created,
            self.errors,
            self.elapsed_s,
            (self.files_copied + self.links_created) as f64 / secs,
            self.jobs,
            if self.dry_run { " (DRY RUN)" } else { "" },
        )
    }

    /// rsync-like `--stats` block.
    pub fn stats_block(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Number of files: {} (reg/links/specials), {} dirs",
            self.files_scanned, self.dirs_scanned
        );
        let _ = writeln!(
            s,
            "Number of regular files transferred: {}",
            self.files_copied
        );
        let _ = writeln!(
            s,
            "Number of links and specials created: {}",
            self.links_created
        );
        let _ = writeln!(s, "Number of entries up to date: {}", self.files_skipped);
        let _ = writeln!(
            s,
            "Number of entries with attributes fixed: {}",
            self.attrs_updated
        );
        let _ = writeln!(s, "Number of deleted files: {}", self.files_deleted);
        let _ = writeln!(s, "Number of created directories: {}", self.dirs_created);
        let _ = writeln!(s, "Total file size: {} bytes", self.bytes_scanned);
        let _ = writeln!(
            s,
            "Total transferred file size: {} bytes",
            self.bytes_copied
        );
        let _ = writeln!(
            s,
            "Errors: {}, vanished: {}, specials skipped: {}, times clamped: {}",
            self.errors, self.vanished, self.specials_skipped, self.times_clamped
        );
        let _ = writeln!(s, "Elapsed: {:.3} s", self.elapsed_s);
        let _ = write!(
            s,
            "Jobs: initial {}, final {}, max {}",
            self.jobs_initial, self.jobs_final, self.jobs_max
        );
        s
    }
}

/// Where messages go. Errors and warnings always go to stderr; itemized changes and
/// `-v` names go to stdout, or to stderr when `--json` owns stdout.
pub struct Output {
    quiet: bool,
    verbose: u8,
    itemize: bool,
    json: bool,
    bar: Mutex<Option<indicatif::ProgressBar>>,
}

impl Output {
    /// Builds the sink from the verbosity flags.
    pub fn new(quiet: bool, verbose: u8, itemize: bool, json: bool) -> Output {
        Output {
            quiet,
            verbose,
            itemize,
            json,
            bar: Mutex::new(None),
        }
    }

    /// Attaches the progress bar so messages are printed above it.
    pub fn set_bar(&self, bar: Option<indicatif::ProgressBar>) {
        *self.bar.lock().unwrap() = bar;
    }

    fn emit(&self, to_stderr: bool, line: &str) {
        let bar = self.bar.lock().unwrap();
        let print = || {
            if to_stderr {
                let _ = writeln!(io::stderr().lock(), "{line}");
            } else {
                // A closed stdout (`| head`) is not an error worth dying for.
                let _ = writeln!(io::stdout().lock(), "{line}");
            }
        };
        match bar.as_ref() {
            Some(b) => b.suspend(print),
            None => print(),
        }
    }

    /// A per-file error: one line naming the path and the cause.
    pub fn error(&self, path: &Path, cause: impl std::fmt::Display) {
        self.emit(true, &format!("nfsync: {}: {cause}", path.display()));
    }

    /// A line about the run as a whole (why it stopped, the closing summary): the
    /// caller decides when it is wanted.
    pub fn note(&self, msg: impl std::fmt::Display) {
        self.emit(true, &format!("nfsync: {msg}"));
    }

    /// One of rsync's informational lines, in its words (`skipping directory NAME`):
    /// on stdout (stderr under `--json`), silenced by `-q`.
    pub fn info(&self, msg: impl std::fmt::Display) {
        if !self.quiet {
            self.emit(self.json, &msg.to_string());
        }
    }

    /// A warning (never suppressed by `-q`, like rsync's).
    pub fn warn(&self, msg: impl std::fmt::Display) {
        self.emit(true, &format!("nfsync: warning: {msg}"));
    }

    /// An itemized change (`-i`) or, with `-v`, the name of what changed.
    pub fn change(&self, code: &str, rel: &Path) {
        if self.quiet {
            return;
        }
        if self.itemize {
            self.emit(self.json, &format!("{code} {}", rel.display()));
        } else if self.verbose > 0 {
            self.emit(self.json, &format!("{}", rel.display()));
        }
    }

    /// A removed entry, as rsync prints it: `*deleting   PATH` with `-i` (a directory
    /// with its slash), `deleting PATH` with `-v`.
    pub fn deletion(&self, rel: &Path, is_dir: bool) {
        if self.quiet || !(self.itemize || self.verbose > 0) {
            return;
        }
        let slash = if is_dir { "/" } else { "" };
        let line = if self.itemize {
            format!("*deleting   {}{slash}", rel.display())
        } else {
            format!("deleting {}{slash}", rel.display())
        };
        self.emit(self.json, &line);
    }

    /// A `-v` diagnostic line (e.g. the job controller's decisions), to stderr.
    pub fn verbose(&self, level: u8, msg: impl std::fmt::Display) {
        if self.verbose >= level && !self.quiet {
            self.emit(true, &format!("nfsync: {msg}"));
        }
    }
}
