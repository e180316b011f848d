//! rsync's filter rules: `--exclude`, `--include`, their `-from` files, `-f/--filter`
//! (include, exclude, hide, show, protect, risk, clear, merge, dir-merge), `-F`, `-C`,
//! and `--delete-excluded`.
//!
//! How rsync applies them, which users' scripts depend on:
//! - rules are tried in order and the first match decides; nothing matching means
//!   included;
//! - each rule works on one side or both: the sender's side decides what is copied
//!   (and an excluded directory is not entered), the receiver's side what `--delete`
//!   may remove (an excluded destination entry is "protected"). `-`/`+` work on both,
//!   `H`/`S` on the sender's only, `P`/`R` on the receiver's only; `--delete-excluded`
//!   makes every rule with no side a sender-side rule, so excluded entries are deleted
//!   unless protected;
//! - a `dir-merge` rule stands in the list for the rules of a file read in every
//!   directory: that directory's rules first, then those inherited from its parents
//!   (unless `n`), matched where the `dir-merge` rule stands. Each directory's rules
//!   live in a [`Scope`] that shares its parent's with `Arc`, so memory grows with the
//!   merge files read, not with the number of directories;
//! - perishable rules (`p`, rsync's built-in CVS names) do not keep a directory that is
//!   being deleted.
//!
//! Per-directory merge files are read from the source, for the receiver's side too
//! (rsync's receiver reads the destination's copy, which is the same file once a run
//! has copied it).

mod merge;
mod pattern;
pub mod rules;
mod scope;

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::options::trust::Trust;
use merge::{Anchor, Loader};
use pattern::Pattern;
use rules::{Mods, Syntax};

/// A filter problem, in rsync's words where rsync has them.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A rule rsync would refuse.
    #[error(transparent)]
    Rule(#[from] rules::RuleError),
    /// A pattern that does not compile (`pattern` is its place when it was read from a
    /// file).
    #[error("bad pattern {pattern:?}: {source}")]
    Pattern {
        pattern: String,
        source: regex::Error,
    },
    /// A rules file that cannot be read. A name read from another file is not shown,
    /// nor why it failed (which would tell whether the path exists).
    #[error("failed to open {}clude file {name}{}", if *include { "in" } else { "ex" }, cause.as_ref().map(|e| format!(": {e}")).unwrap_or_default())]
    Open {
        name: String,
        include: bool,
        cause: Option<std::io::Error>,
        /// Named by a rule (not a per-directory file that may be absent): ends the run.
        required: bool,
    },
    /// A `dir-merge` rule inside a merge file read above the transfer.
    #[error("dir-merge {name} inside a per-directory merge file is not supported (rule ignored)")]
    NestedDirMerge { name: String },
    /// A rule longer than a path can be: left out, as rsync leaves it out.
    #[error("discarding over-long filter: {shown}")]
    OverLong { shown: String },
    /// A problem noted while reading a per-directory merge file, the run going on.
    #[error("{0}")]
    Noted(String),
    /// A per-directory merge file whose path, once its directory is put in front,
    /// is longer than a path can be.
    #[error("merge-file name overflows: {shown}")]
    NameOverflows { shown: String },
    /// Merge files that include each other more than rsync's limit deep: ends the
    /// run, as in rsync (exit 11).
    #[error(
        "merge-file include depth limit ({}) exceeded at {at}",
        merge::MAX_DEPTH
    )]
    Depth { at: String },
}

impl Error {
    /// Whether the error ends the run (exit 11, as rsync) rather than one directory's
    /// rules.
    pub fn ends_run(&self) -> bool {
        matches!(
            self,
            Error::Depth { .. } | Error::Open { required: true, .. }
        )
    }
}

/// Which side's rules to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// What is copied.
    Sender,
    /// What `--delete` may remove.
    Receiver,
}

/// Where a command-line rule came from: rsync reads each with its own syntax.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// `--exclude PATTERN` (`+ `/`- ` prefixes allowed, `!` clears).
    Exclude,
    /// `--include PATTERN`.
    Include,
    /// `-f/--filter RULE`.
    Filter,
}

#[derive(Clone, Debug)]
struct MatchRule {
    pattern: Pattern,
    /// The rule as traces show it: its pattern when it is an argument, where it was
    /// read when it is a file's text.
    shown: Arc<str>,
    include: bool,
    sender: bool,
    receiver: bool,
    perishable: bool,
    xattr: bool,
    /// Matched against the absolute path (the `/` modifier, or a rule anchored in a
    /// merge file above the transfer).
    abs: bool,
}

#[derive(Clone, Debug)]
enum Rule {
    Match(MatchRule),
    /// The rules of a per-directory merge file (index into [`Filter::merges`]).
    DirMerge(usize),
}

/// A per-directory merge file.
#[derive(Clone, Debug)]
struct DirMerge {
    /// Named by a file's text (a `dir-merge` rule inside a merge file): neither its
    /// name nor where it was named is shown, as rsync shows neither.
    from_file: bool,
    /// The file's name in each directory.
    name: OsString,
    /// Modifiers its rules take.
    template: Mods,
    /// For a name with a directory (`-F` is `dir-merge /.rsync-filter`): that
    /// directory, absolute; when it is above the transfer, the file is read in it and
    /// in every directory down to the transfer, as rsync does.
    scan_from: Option<PathBuf>,
}

/// One directory's rules from one merge file, then its parent's.
#[derive(Debug)]
struct Chain {
    rules: Vec<Rule>,
    next: Option<Arc<Chain>>,
}

/// The per-directory rules in force in one source directory.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// The transfer directory, absolute, without its leading `/`, with a trailing
    /// one (for rules that match the absolute path).
    base: Arc<[u8]>,
    /// The per-directory merge files in force here: the command line's
    /// ([`Filter::merges`]), then those `dir-merge` rules inside merge files named in
    /// this directory or above it (rsync reads them from there down).
    merges: Arc<[DirMerge]>,
    /// One chain per `merges` entry.
    lists: Vec<Option<Arc<Chain>>>,
}

/// What parsing the command line's rules has to say besides failing: warnings and,
/// with `--debug=FILTER`, traces.
#[derive(Clone, Debug)]
pub enum Note {
    /// A rule left out (`discarding over-long filter`), for stderr.
    Warn(String),
    /// A `--debug=FILTER` line, for stdout.
    Debug(String),
}

/// The filter rules of a run.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    rules: Vec<Rule>,
    merges: Vec<DirMerge>,
    delete_excluded: bool,
    /// rsync's `--debug=FILTER` level (`-vv` gives 1, `-vvv` 2).
    debug: u8,
    /// What parsing the command line's rules had to say.
    notes: Vec<Note>,
    /// Which symlinks a merge file's path may lead through.
    trust: Trust,
}

impl Filter {
    /// An empty list; with `--delete-excluded` rules added later lose their receiver
    /// side.
    pub fn new(delete_excluded: bool) -> Filter {
        Filter {
            delete_excluded,
            ..Filter::default()
        }
    }

    /// Sets which symlinks the paths of merge files read after may lead through
    /// (rsync's rule by default; `--insecure-links`: all).
    pub fn set_trust(&mut self, trust: Trust) {
        self.trust = trust;
    }

    /// Sets rsync's `--debug=FILTER` level for the rules added after.
    pub fn set_debug(&mut self, level: u8) {
        self.debug = level;
    }

    /// The `--debug=FILTER` level.
    pub fn debug(&self) -> u8 {
        self.debug
    }

    /// What parsing the command line's rules had to say, in order; taken once.
    pub fn take_notes(&mut self) -> Vec<Note> {
        std::mem::take(&mut self.notes)
    }

    /// Parses with a loader for the command line's list, keeping what it notes.
    fn with_loader(
        &mut self,
        old_prefixes: bool,
        parse: impl FnOnce(&mut Loader<'_>, &mut Vec<Rule>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut loader = Loader {
            syntax: Syntax {
                old_prefixes,
                delete_excluded: self.delete_excluded,
            },
            anchor: Anchor::Root,
            dir: None,
            listed: None,
            merges: Some(merge::NewMerges {
                added: &mut self.merges,
                base: 0,
                known: &[],
            }),
            cleared: false,
            depth: 0,
            source: None,
            hidden_name: false,
            trust: self.trust,
            debug: self.debug,
            notes: Vec::new(),
        };
        let res = parse(&mut loader, &mut self.rules);
        let notes = std::mem::take(&mut loader.notes);
        self.notes.extend(notes);
        res
    }

    /// Adds one command-line rule.
    pub fn add_arg(&mut self, arg: Arg, text: &[u8]) -> Result<(), Error> {
        let template = Mods {
            include: arg == Arg::Include,
            ..Mods::default()
        };
        self.with_loader(arg != Arg::Filter, |l, list| {
            l.parse_str(list, text, &template)
        })
    }

    /// Adds a bare pattern: `--exclude PATTERN` or `--include PATTERN`.
    pub fn add(&mut self, pattern: impl AsRef<[u8]>, include: bool) -> Result<(), Error> {
        let arg = if include { Arg::Include } else { Arg::Exclude };
        self.add_arg(arg, pattern.as_ref())
    }

    /// `--exclude-from FILE` / `--include-from FILE` (`-`: stdin).
    pub fn add_file(&mut self, path: &Path, include: bool) -> Result<(), Error> {
        let template = Mods {
            include,
            ..Mods::default()
        };
        self.with_loader(true, |l, list| l.parse_file(list, path, &template, true))
    }

    /// Adds the text of a rules file read elsewhere (tests, stdin already read).
    pub fn add_text(&mut self, text: &[u8], include: bool) -> Result<(), Error> {
        let template = Mods {
            include,
            ..Mods::default()
        };
        self.with_loader(true, |l, list| l.parse_text(list, text, &template))
    }

    /// `-C`: rsync appends `:C` (each directory's `.cvsignore`) and `-C` (its built-in
    /// list, `~/.cvsignore`, `$CVSIGNORE`) after all other rules.
    pub fn add_cvs_exclude(&mut self) -> Result<(), Error> {
        self.add_arg(Arg::Filter, b":C")?;
        self.add_arg(Arg::Filter, b"-C")
    }

    /// Whether rules are read from files inside the source's directories (`dir-merge`,
    /// `-F`, `-C`'s `.cvsignore`).
    pub fn reads_dirs(&self) -> bool {
        !self.merges.is_empty()
    }

    /// True when there are no rules (the common case: skip matching entirely).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether `rel` (below the transfer root) is excluded on `side`, by the rules in
    /// force in its directory (`scope`).
    pub fn excluded(&self, scope: &Scope, rel: &Path, is_dir: bool, side: Side) -> bool {
        self.check(scope, rel.as_os_str().as_bytes(), is_dir, side, false) == Some(false)
    }

    /// The rule that decides `rel` on `side`, if one does: whether it excludes, and
    /// the rule as a trace may show it (rsync's `because of pattern ...`).
    pub fn decided_by<'a>(
        &'a self,
        scope: &'a Scope,
        rel: &Path,
        is_dir: bool,
        side: Side,
    ) -> Option<(bool, &'a str)> {
        let m = self.first_match(scope, rel.as_os_str().as_bytes(), is_dir, side, false)?;
        Some((!m.include, &m.shown))
    }

    /// Whether an entry inside a directory being deleted stays (the receiver's side,
    /// perishable rules left out). `rel` is below the transfer root; a protected
    /// directory between `top` (the deleted directory, already decided) and `rel`
    /// keeps `rel` too.
    pub fn protected_in_deletion(
        &self,
        scope: &Scope,
        top: &Path,
        rel: &Path,
        is_dir: bool,
    ) -> bool {
        if self.is_empty() {
            return false;
        }
        let bytes = rel.as_os_str().as_bytes();
        if self.check(scope, bytes, is_dir, Side::Receiver, true) == Some(false) {
            return true;
        }
        let top = top.as_os_str().len();
        bytes
            .iter()
            .enumerate()
            .filter(|&(i, &c)| c == b'/' && i > top)
            .any(|(i, _)| self.check(scope, &bytes[..i], true, Side::Receiver, true) == Some(false))
    }

    /// Sender-side exclusion with no per-directory rules (for tests and callers with
    /// no scope).
    pub fn is_excluded(&self, rel: &Path, is_dir: bool) -> bool {
        self.excluded(&Scope::default(), rel, is_dir, Side::Sender)
    }

    fn check(
        &self,
        scope: &Scope,
        rel: &[u8],
        is_dir: bool,
        side: Side,
        skip_perishable: bool,
    ) -> Option<bool> {
        self.first_match(scope, rel, is_dir, side, skip_perishable)
            .map(|m| m.include)
    }

    fn first_match<'a>(
        &'a self,
        scope: &'a Scope,
        rel: &[u8],
        is_dir: bool,
        side: Side,
        skip_perishable: bool,
    ) -> Option<&'a MatchRule> {
        let test = |m: &MatchRule| -> bool {
            let applies = match side {
                Side::Sender => m.sender,
                Side::Receiver => m.receiver,
            };
            if !applies || m.xattr || (skip_perishable && m.perishable) {
                return false;
            }
            if m.abs {
                let mut p = scope.base.to_vec();
                p.extend_from_slice(rel);
                m.pattern.matches(&p, is_dir)
            } else {
                m.pattern.matches(rel, is_dir)
            }
        };
        first_in(&self.rules, scope, &test)
    }
}

/// The first rule of `rules` that `test` accepts, a `dir-merge` rule standing for the
/// rules its files gave in `scope` (which may hold `dir-merge` rules of their own: each
/// names a file added after its own, so the descent ends).
fn first_in<'a>(
    rules: &'a [Rule],
    scope: &'a Scope,
    test: &dyn Fn(&MatchRule) -> bool,
) -> Option<&'a MatchRule> {
    for rule in rules {
        match rule {
            Rule::Match(m) if test(m) => return Some(m),
            Rule::Match(_) => {}
            Rule::DirMerge(i) => {
                let mut chain = scope.lists.get(*i).and_then(|c| c.as_deref());
                while let Some(c) = chain {
                    if let Some(m) = first_in(&c.rules, scope, test) {
                        return Some(m);
                    }
                    chain = c.next.as_deref();
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;
