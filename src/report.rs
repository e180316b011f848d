//! Counting what happened and telling the user: per-file messages, itemized changes,
//! and the end-of-run summary (one line, `--stats`, or `--json`).
//!
//! Counters are atomics bumped by every worker; messages go through [`Output`], which
//! knows about the progress bar so a line never tears it.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};

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
    /// Source directories whose listing is done (or failed): with `dirs_scanned` and
    /// `roots_planned`, whether the walk can still find more.
    pub dirs_listed: AtomicU64,
    /// The operands have been listed and their children queued.
    pub roots_planned: AtomicBool,
}

impl Stats {
    /// Adds one to a counter.
    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Relaxed);
    }

    /// Whether every directory found has been listed: the totals are final.
    ///
    /// A directory is counted as found before its parent's listing is counted as done,
    /// so reading the listed count first and then the found count can only see them
    /// equal when nothing is left to list.
    pub fn walk_finished(&self) -> bool {
        if !self.roots_planned.load(SeqCst) {
            return false;
        }
        let listed = self.dirs_listed.load(SeqCst);
        listed == self.dirs_scanned.load(SeqCst)
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
    /// `--shard`: the share these totals are of ("K/N"), so a job script can add them up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// `--mpi`: how many ranks these totals add up (rank 0's report).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<u64>,
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
            shard: None,
            ranks: None,
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

    /// An itemized change (`-i`) or, with `-v`, the name of what changed, as rsync
    /// prints them: a directory with its slash, names escaped ([`escape_name`]).
    pub fn change(&self, code: &str, rel: &Path) {
        self.change_to(code, rel, None);
    }

    /// Whether changed names are printed at all (`-i` or `-v`, not `-q`).
    fn names_shown(&self) -> bool {
        !self.quiet && (self.itemize || self.verbose > 0)
    }

    /// [`Output::change`] for a symlink: rsync adds ` -> TARGET`.
    pub fn change_to(&self, code: &str, rel: &Path, link: Option<&Path>) {
        if !self.names_shown() {
            return;
        }
        let mut name = escape_name(rel.as_os_str().as_bytes());
        if code.as_bytes().get(1) == Some(&b'd') && !name.ends_with('/') {
            name.push('/');
        }
        if let Some(t) = link {
            name.push_str(" -> ");
            name.push_str(&escape_name(t.as_os_str().as_bytes()));
        }
        if self.itemize {
            self.emit(self.json, &format!("{code} {name}"));
        } else {
            self.emit(self.json, &name);
        }
    }

    /// DEST did not exist and was made: rsync's `created directory DEST` (before the
    /// itemized lines, with `-i` or `-v`).
    pub fn created_dest(&self, dest: &Path) {
        if self.quiet || !(self.itemize || self.verbose > 0) {
            return;
        }
        let bytes = dest.as_os_str().as_bytes();
        let end = bytes.len() - bytes.iter().rev().take_while(|&&b| b == b'/').count();
        let name = escape_name(&bytes[..end.max(1)]);
        self.emit(self.json, &format!("created directory {name}"));
    }

    /// A removed entry, as rsync prints it: `*deleting   PATH` with `-i` (a directory
    /// with its slash), `deleting PATH` with `-v`.
    pub fn deletion(&self, rel: &Path, is_dir: bool) {
        if self.quiet || !(self.itemize || self.verbose > 0) {
            return;
        }
        let slash = if is_dir { "/" } else { "" };
        let name = escape_name(rel.as_os_str().as_bytes());
        let line = if self.itemize {
            format!("*deleting   {name}{slash}")
        } else {
            format!("deleting {name}{slash}")
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

/// A file name as rsync prints it in a UTF-8 locale, so tools that parse its `-i` lines
/// read nfsync's the same way: a byte that is not part of valid UTF-8 and a control
/// character other than tab become `\#ooo` (octal), and so does the backslash of a
/// literal `\#` followed by three digits, so that the escape stays unambiguous.
pub fn escape_name(name: &[u8]) -> String {
    let mut out = String::with_capacity(name.len());
    for chunk in name.utf8_chunks() {
        let text = chunk.valid();
        for (i, c) in text.char_indices() {
            let escaped_backslash = c == '\\' && {
                let rest = &text.as_bytes()[i + 1..];
                rest.len() >= 4 && rest[0] == b'#' && rest[1..4].iter().all(u8::is_ascii_digit)
            };
            if (c < ' ' && c != '\t') || escaped_backslash {
                let _ = write!(out, "\\#{:03o}", c as u32);
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\#{b:03o}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape_name;

    #[test]
    fn names_are_escaped_as_rsync_escapes_them() {
        // What rsync 3.2 printed for these names under LANG=C.UTF-8.
        assert_eq!(escape_name(b"nl\nname"), "nl\\#012name");
        assert_eq!(escape_name(b"bad\xffname"), "bad\\#377name");
        assert_eq!(escape_name(b"tab\tx"), "tab\tx");
        assert_eq!(escape_name(b"del\x7fx"), "del\x7fx");
        assert_eq!(escape_name("ümlaut".as_bytes()), "ümlaut");
        assert_eq!(escape_name(b"back\\#slash"), "back\\#slash");
        assert_eq!(escape_name(b"back\\x"), "back\\x");
        assert_eq!(escape_name(b"esc\\#123"), "esc\\#134#123");
    }
}
