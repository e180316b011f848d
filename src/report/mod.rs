//! Counting what happened and telling the user: per-file messages, itemized changes,
//! and the end-of-run summary (one line, `--stats`, or `--json`).
//!
//! Counters are atomics bumped by every worker; messages go through [`Output`], which
//! knows about the progress bar so a line never tears it.

use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;

use crate::meta::{Kind, Meta};

mod counts;
mod escape;
pub mod format;
pub mod itemize;
mod items;
pub mod list_only;
pub mod logfile;
mod order;
pub use order::Done;
pub mod progress;
pub mod stats;
pub mod units;

pub use counts::{RankTotals, Stats, Summary};
pub use escape::{Escaped, escape_controls, escape_name, escape_text};
use format::{Context, Item, LogFormat};
pub use itemize::{Changes, Itemize, TimeChange, Update};
use logfile::LogFile;
use stats::{RsyncStats, Tally};
use units::HumanLevel;

/// Where messages go. Errors and warnings always go to stderr; itemized changes and
/// `-v` names go to stdout, or to stderr when `--json` owns stdout. With `--log-file`
/// rsync's log gets its lines too.
pub struct Output {
    quiet: bool,
    verbose: u8,
    json: bool,
    bar: Mutex<Option<indicatif::ProgressBar>>,
    /// The per-file lines' format on stdout: `-i`'s, `-v`'s, `--out-format`'s, or none.
    format: Option<LogFormat>,
    /// `-ii` (or `-i` with `-vv`): entries already up to date get a line too.
    itemize_all: bool,
    log: Option<LogFile>,
    /// `-n`: rsync's log then has no deletions.
    dry_run: bool,
    context: Context,
    /// What the per-file lines add up to (rsync's `--stats` counts).
    pub tally: Tally,
    /// `-8/--8-bit-output`.
    eight_bit: bool,
    /// `-c`: `%C` shows every file's checksum, not only those sent.
    all_checksums: bool,
    /// `--progress` where stdout is no terminal: rsync's line after each file sent,
    /// its numbers in this style.
    file_progress: Option<HumanLevel>,
    /// Files sent so far (rsync's `xfr#`), held while the line that numbers one is
    /// printed so the numbers come in order.
    sent: Mutex<u64>,
    /// The lines held until rsync's order lets them be printed ([`order`]).
    order: Mutex<order::Order>,
    /// A file copied onto another name: its lines show the source's name (DEST's
    /// name, the source's), as rsync's do.
    shown_as: std::sync::OnceLock<(std::path::PathBuf, std::path::PathBuf)>,
}

/// The source entry a per-file line is about.
#[derive(Clone, Copy)]
pub struct Source<'a> {
    /// Its attributes as listed.
    pub meta: &'a Meta,
    /// Its path as nfsync read it.
    pub path: &'a Path,
}

impl<'a> From<&'a crate::source::SrcEntry> for Source<'a> {
    fn from(e: &'a crate::source::SrcEntry) -> Self {
        Source {
            meta: &e.meta,
            path: &e.path,
        }
    }
}

impl Output {
    /// Builds the sink from the verbosity flags.
    pub fn new(quiet: bool, verbose: u8, itemize: u8, json: bool) -> Output {
        let format = if itemize > 0 {
            Some(LogFormat::itemize())
        } else if verbose > 0 {
            Some(LogFormat::names())
        } else {
            None
        };
        Output {
            quiet,
            verbose,
            json,
            bar: Mutex::new(None),
            format,
            itemize_all: itemize > 1,
            log: None,
            dry_run: false,
            context: Context {
                owners: false,
                groups: false,
                pid: std::process::id(),
            },
            tally: Tally::default(),
            eight_bit: false,
            all_checksums: false,
            file_progress: None,
            sent: Mutex::new(0),
            order: Mutex::default(),
            shown_as: std::sync::OnceLock::new(),
        }
    }

    /// rsync's `--out-format` (replacing `-i`'s and `-v`'s), `--log-file`, whether
    /// owners and groups are kept (what `%U` and `%G` show), and `-n`.
    pub fn with_formats(
        mut self,
        out_format: Option<LogFormat>,
        log: Option<LogFile>,
        (owners, groups): (bool, bool),
        dry_run: bool,
    ) -> Output {
        self.dry_run = dry_run;
        if out_format.is_some() {
            self.format = out_format;
        }
        if let Some(l) = &log {
            l.line(b"building file list");
        }
        self.log = log;
        self.context.owners = owners;
        self.context.groups = groups;
        self
    }

    /// `-c`: `%C` shows the checksum of every file shown, as rsync's does.
    pub fn with_all_checksums(mut self, on: bool) -> Output {
        self.all_checksums = on;
        self
    }

    /// `-8`: names keep their bytes that are not UTF-8 as they are.
    pub fn with_eight_bit(mut self, on: bool) -> Output {
        self.eight_bit = on;
        self
    }

    /// `--progress` where no bar shows it: after each file sent, rsync's last progress
    /// line for it (`   5,000 100%    4.77MB/s    0:00:00 (xfr#2, to-chk=0/4)`), and
    /// the names of what changed as with `-v` unless another format is given.
    pub fn with_file_progress(mut self, human: Option<HumanLevel>) -> Output {
        self.file_progress = human;
        if human.is_some() && self.format.is_none() {
            self.format = Some(LogFormat::names());
        }
        self
    }

    /// A line as printed: names escaped as rsync escapes them ([`escape_name`]), or
    /// with `-8` only their control characters ([`escape_controls`]).
    fn escape(&self, line: &[u8]) -> Vec<u8> {
        match self.eight_bit {
            true => escape_controls(line),
            false => escape_name(line).into_bytes(),
        }
    }

    /// Attaches the progress bar so messages are printed above it.
    pub fn set_bar(&self, bar: Option<indicatif::ProgressBar>) {
        *self.bar.lock().unwrap() = bar;
    }

    fn emit(&self, to_stderr: bool, line: impl AsRef<[u8]>) {
        let mut line = line.as_ref().to_vec();
        line.push(b'\n');
        let bar = self.bar.lock().unwrap();
        let print = || {
            if to_stderr {
                let _ = io::stderr().lock().write_all(&line);
            } else {
                // A closed stdout (`| head`) is not an error worth dying for.
                let _ = io::stdout().lock().write_all(&line);
            }
        };
        match bar.as_ref() {
            Some(b) => b.suspend(print),
            None => print(),
        }
    }

    /// A message line (not a per-file line), to stderr or to where `-v` names go, and
    /// with `logged` to rsync's log (its FINFO, FWARNING and FERROR lines). Its names
    /// are [`Escaped`] by whoever wrote it; the rest, an error's words among them, is
    /// escaped here ([`escape_text`]) so no part of it drives the terminal.
    fn message(&self, to_stderr: bool, line: &str, logged: bool) {
        let line = escape_text(line);
        if let Some(l) = self.log.as_ref().filter(|_| logged) {
            l.text(&line);
        }
        self.emit(to_stderr, line.as_bytes());
    }

    /// A per-file error: one line naming the path and the cause.
    pub fn error(&self, path: &Path, cause: impl std::fmt::Display) {
        self.message(true, &format!("nfsync: {}: {cause}", Escaped(path)), true);
    }

    /// A line about the run as a whole (why it stopped, the closing summary): the
    /// caller decides when it is wanted.
    pub fn note(&self, msg: impl std::fmt::Display) {
        self.message(true, &format!("nfsync: {msg}"), false);
    }

    /// A line on stderr without nfsync's prefix (a JSON object, whose control
    /// characters serde already wrote as `\u00XX`), above the bar if there is one.
    pub fn note_raw(&self, line: impl std::fmt::Display) {
        self.message(true, &line.to_string(), false);
    }

    /// One of rsync's informational lines, in its words (`skipping directory NAME`):
    /// on stdout (stderr under `--json`), silenced by `-q`.
    pub fn info(&self, msg: impl std::fmt::Display) {
        if !self.quiet {
            self.message(self.json, &msg.to_string(), true);
        }
    }

    /// A warning (never suppressed by `-q`, like rsync's).
    pub fn warn(&self, msg: impl std::fmt::Display) {
        self.message(true, &format!("nfsync: warning: {msg}"), true);
    }

    /// A file copied onto the name `dest` (DEST's) is shown as `src`, the source's.
    pub fn show_as(&self, dest: &Path, src: &Path) {
        let _ = self.shown_as.set((dest.to_owned(), src.to_owned()));
    }

    /// `--mkpath`'s line for the `n` directories it made up to `path`, as rsync's.
    pub fn created_dirs(&self, n: usize, path: &Path) {
        let what = if n == 1 { "directory" } else { "directories" };
        self.created(format!("created {n} {what} for "), path);
    }

    /// DEST did not exist and was made: rsync's `created directory DEST` (before the
    /// itemized lines, with `-i` or `-v`).
    pub fn created_dest(&self, dest: &Path) {
        self.created("created directory ".to_string(), dest);
    }

    /// A `created …` line ending in `path` (its trailing slashes left out).
    fn created(&self, words: String, path: &Path) {
        let bytes = path.as_os_str().as_bytes();
        let end = bytes.len() - bytes.iter().rev().take_while(|&&b| b == b'/').count();
        let mut line = words.into_bytes();
        line.extend_from_slice(&bytes[..end.max(1)]);
        // rsync: with -v, or when the per-file format has %i (-i's has).
        let shown = self.verbose > 0 || self.format.as_ref().is_some_and(|f| f.has_i);
        if self.quiet || !shown {
            return;
        }
        if let Some(l) = &self.log {
            l.line(&line);
        }
        self.emit(self.json, self.escape(&line));
    }

    /// A removed entry, as rsync prints it: `*deleting   PATH` with `-i` (a directory
    /// with its slash), `deleting PATH` with `-v`, or in `--out-format` when it has
    /// `%o` or `%i`.
    pub fn deletion(&self, rel: &Path, kind: Kind) {
        self.tally.deleted.add(kind);
        let item = Item {
            code: Itemize::Deleting,
            rel,
            kind,
            meta: None,
            src: None,
            link: None,
            hard_link: None,
            bytes: 0,
            checksum: None,
        };
        let deleting = LogFormat::deleting();
        let pick = |f: &'_ LogFormat| -> Vec<u8> {
            let f = if f.has_o_or_i { f } else { &deleting };
            f.render(&item, &self.context)
        };
        if let Some(l) = self.log.as_ref().filter(|_| !self.dry_run) {
            l.line(&pick(&l.format));
        }
        if let Some(f) = self.format.as_ref().filter(|_| !self.quiet) {
            self.emit(self.json, self.escape(&pick(f)));
        }
    }

    /// The closing lines in rsync's layout: with `--stats` its block, with `-v` or
    /// `--stats` its `sent … bytes` and `total size is …` lines (each after a blank
    /// line, as rsync prints them); the log file gets them too, or rsync's one-line
    /// ending when neither was asked for.
    pub fn rsync_summary(&self, s: &RsyncStats, stats: bool) {
        let totals = stats || self.verbose > 0;
        let mut lines = Vec::new();
        if stats {
            lines.push(String::new());
            lines.extend(s.block());
        }
        if totals {
            lines.push(String::new());
            lines.extend(s.totals());
        } else if let Some(l) = &self.log {
            l.text(&s.log_exit());
        }
        for line in lines {
            if let Some(l) = self.log.as_ref().filter(|_| !line.is_empty()) {
                l.text(&line);
            }
            if !self.quiet {
                self.emit(self.json, &line);
            }
        }
    }

    /// A `-v` diagnostic line (e.g. the job controller's decisions), to stderr.
    pub fn verbose(&self, level: u8, msg: impl std::fmt::Display) {
        if self.verbose >= level && !self.quiet {
            self.message(true, &format!("nfsync: {msg}"), false);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn checksums_are_rsyncs_xxh128() {
        let dir = std::env::temp_dir().join(format!("nfsync-sum-{}", std::process::id()));
        std::fs::write(&dir, "data3\n").unwrap();
        let sum = super::items::file_checksum(&dir);
        std::fs::remove_file(&dir).unwrap();
        // What rsync 3.2 printed for this content with --out-format=%C.
        assert_eq!(sum, Some(0xc6930651a6933db55501f34aab58c54f));
    }
}
