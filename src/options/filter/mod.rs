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
mod tests {
    use super::*;

    fn filter(rules: &[&str]) -> Filter {
        let mut f = Filter::default();
        for r in rules {
            f.add_arg(Arg::Filter, r.as_bytes()).unwrap();
        }
        f
    }

    fn ex(f: &Filter, rel: &str, side: Side) -> bool {
        f.excluded(&Scope::default(), Path::new(rel), false, side)
    }

    #[test]
    fn first_match_wins() {
        let f = filter(&["+ keep.log", "- *.log"]);
        assert!(!f.is_excluded(Path::new("d/keep.log"), false));
        assert!(f.is_excluded(Path::new("d/other.log"), false));
    }

    #[test]
    fn sides_of_hide_show_protect_risk() {
        let f = filter(&["H h", "P p", "R r", "- r", "S s", "- s", "- both"]);
        assert!(ex(&f, "h", Side::Sender) && !ex(&f, "h", Side::Receiver));
        assert!(!ex(&f, "p", Side::Sender) && ex(&f, "p", Side::Receiver));
        assert!(ex(&f, "r", Side::Sender) && !ex(&f, "r", Side::Receiver));
        assert!(!ex(&f, "s", Side::Sender) && ex(&f, "s", Side::Receiver));
        assert!(ex(&f, "both", Side::Sender) && ex(&f, "both", Side::Receiver));
    }

    #[test]
    fn delete_excluded_leaves_only_protect_rules_on_the_receiver() {
        let mut f = Filter::new(true);
        for r in ["P *.keep", "- *.o", "-r *.r"] {
            f.add_arg(Arg::Filter, r.as_bytes()).unwrap();
        }
        f.add(b"*.x", false).unwrap();
        assert!(ex(&f, "a.o", Side::Sender) && !ex(&f, "a.o", Side::Receiver));
        assert!(ex(&f, "a.x", Side::Sender) && !ex(&f, "a.x", Side::Receiver));
        assert!(ex(&f, "a.keep", Side::Receiver));
        assert!(ex(&f, "a.r", Side::Receiver) && !ex(&f, "a.r", Side::Sender));
    }

    #[test]
    fn clear_forgets_earlier_rules() {
        let f = filter(&["- a", "!", "- b"]);
        assert!(!ex(&f, "a", Side::Sender));
        assert!(ex(&f, "b", Side::Sender));
        let mut f = Filter::default();
        f.add(b"a", false).unwrap();
        f.add(b"!", false).unwrap();
        assert!(f.is_empty());
    }

    #[test]
    fn exclude_prefix_in_include_and_exclude_args() {
        let mut f = Filter::default();
        f.add(b"+ keep", false).unwrap();
        f.add(b"*", false).unwrap();
        assert!(!ex(&f, "keep", Side::Sender));
        assert!(ex(&f, "other", Side::Sender));
    }

    #[test]
    fn negation_and_perishable() {
        let f = filter(&["-! *.c"]);
        assert!(ex(&f, "a.o", Side::Sender) && !ex(&f, "a.c", Side::Sender));
        let f = filter(&["-p *.o"]);
        let s = Scope::default();
        assert!(f.excluded(&s, Path::new("d/a.o"), false, Side::Receiver));
        assert!(!f.protected_in_deletion(&s, Path::new("d"), Path::new("d/a.o"), false));
    }

    #[test]
    fn protection_inside_a_deleted_directory_covers_protected_directories() {
        let f = filter(&["P keep/", "P *.p"]);
        let s = Scope::default();
        let top = Path::new("gone");
        assert!(f.protected_in_deletion(&s, top, Path::new("gone/x.p"), false));
        assert!(f.protected_in_deletion(&s, top, Path::new("gone/keep/y"), false));
        assert!(!f.protected_in_deletion(&s, top, Path::new("gone/y"), false));
    }

    #[test]
    fn exclude_from_reads_rsync_filter_lines() {
        let mut f = Filter::default();
        f.add_text(
            b"# comment\n\n+ keep.tmp\r\n- *.tmp\n*.bak\n; more\n",
            false,
        )
        .unwrap();
        assert!(!f.is_excluded(Path::new("keep.tmp"), false));
        assert!(f.is_excluded(Path::new("x.tmp"), false));
        assert!(f.is_excluded(Path::new("x.bak"), false));
        let mut f = Filter::default();
        f.add_text(b"x\n- y\n", true).unwrap();
        assert!(!ex(&f, "x", Side::Sender) && ex(&f, "y", Side::Sender));
    }

    #[test]
    fn dir_merge_files_are_inherited_unless_n() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join(".f"), "- *.o\n").unwrap();
        std::fs::write(root.join("a/.f"), "+ keep.o\n- /local\n").unwrap();
        std::fs::write(root.join(".n"), "- *.n\n").unwrap();
        let f = filter(&[": .f", ":n .n"]);
        let (top, errs) = f.root_scope(root, Some(root), true);
        assert!(errs.is_empty());
        let (a, _) = f.enter(&top, &root.join("a"), Path::new("a"));
        let (b, _) = f.enter(&a, &root.join("a/b"), Path::new("a/b"));
        let x = |s: &Scope, rel: &str| f.excluded(s, Path::new(rel), false, Side::Sender);
        assert!(x(&top, "x.o") && x(&b, "a/b/x.o"));
        assert!(x(&top, "keep.o") && !x(&a, "a/keep.o") && !x(&b, "a/b/keep.o"));
        assert!(x(&a, "a/local") && !x(&b, "a/b/local"));
        assert!(x(&top, "x.n") && !x(&a, "a/x.n"));
    }

    #[test]
    fn dir_merge_clear_drops_inherited_rules() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join(".f"), "- *.o\n").unwrap();
        std::fs::write(root.join("a/.f"), "!\n- *.p\n").unwrap();
        let f = filter(&["dir-merge .f"]);
        let (top, _) = f.root_scope(root, Some(root), true);
        let (a, _) = f.enter(&top, &root.join("a"), Path::new("a"));
        assert!(!f.excluded(&a, Path::new("a/x.o"), false, Side::Sender));
        assert!(f.excluded(&a, Path::new("a/x.p"), false, Side::Sender));
    }

    #[test]
    fn cvs_exclude_reads_cvsignore_words_not_inherited() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join(".cvsignore"), "one.x  two.x\nthree.x").unwrap();
        let mut f = Filter::default();
        f.add_cvs_exclude().unwrap();
        let (top, _) = f.root_scope(root, Some(root), true);
        let (a, _) = f.enter(&top, &root.join("a"), Path::new("a"));
        for n in ["one.x", "two.x", "three.x", "core", "x.o", ".git"] {
            let is_dir = n == ".git";
            assert!(f.excluded(&top, Path::new(n), is_dir, Side::Sender), "{n}");
        }
        assert!(!f.excluded(&a, Path::new("a/one.x"), false, Side::Sender));
        // The built-in names are perishable.
        assert!(!f.protected_in_deletion(&top, Path::new("d"), Path::new("d/x.o"), false));
    }

    #[test]
    fn a_merge_file_named_in_a_merge_file_is_neither_shown_nor_located() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("src");
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(tmp.path().join("secret"), "SECRET-LINE\n").unwrap();
        std::fs::write(root.join(".f"), ": ../secret\n").unwrap();
        std::fs::write(root.join("a/.g"), "- sec[r]et-x\n").unwrap();
        std::fs::write(root.join("a/.f"), ": .g\n").unwrap();
        let f = filter(&[": .f"]);
        let (top, errs) = f.root_scope(&root, Some(&root), true);
        let said: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert!(
            said.len() == 1
                && said[0].ends_with(": <rule from a file read earlier>")
                && !said[0].contains("SECRET"),
            "{said:?}"
        );
        // `.g`, named in a/.f, works in a and below, not beside it; what decided is
        // said by place.
        let (a, _) = f.enter(&top, &root.join("a"), Path::new("a"));
        let (b, _) = f.enter(&a, &root.join("a/b"), Path::new("a/b"));
        let side = Side::Sender;
        let by = |s: &Scope, rel: &str| {
            f.decided_by(s, Path::new(rel), false, side)
                .map(|(x, why)| (x, why.to_string()))
        };
        assert_eq!(
            by(&a, "a/secret-x"),
            Some((true, "<rule from a file read earlier>".to_string()))
        );
        assert!(by(&b, "a/b/secret-x").is_some() && by(&top, "secret-x").is_none());
        let f = filter(&["- own[r]ule"]);
        let s = Scope::default();
        assert_eq!(
            f.decided_by(&s, Path::new("ownrule"), false, side),
            Some((true, "own[r]ule"))
        );
    }

    #[test]
    fn over_long_rules_are_left_out_and_trailing_blanks_noted() {
        let mut f = Filter::default();
        f.set_debug(1);
        let long = format!("- {}", "Q".repeat(5000));
        f.add_arg(Arg::Filter, long.as_bytes()).unwrap();
        f.add_arg(Arg::Filter, b"- mine ").unwrap();
        assert!(f.rules.len() == 1);
        let notes = f.take_notes();
        assert!(matches!(&notes[0], Note::Warn(w)
            if w.starts_with("discarding over-long filter: QQQ") && w.len() > 5000));
        assert!(matches!(&notes[1], Note::Debug(d)
            if d == "[sender] add_rule(- mine ) -- CAUTION: trailing whitespace!"));
        // A file's rule is not mentioned, however it ends.
        let tmp = tempfile::tempdir().unwrap();
        let rules = tmp.path().join("rules");
        std::fs::write(&rules, "- theirs \n").unwrap();
        f.add_file(&rules, false).unwrap();
        assert!(f.take_notes().is_empty());
    }

    #[test]
    fn merge_reads_a_file_now_and_e_excludes_it() {
        let tmp = tempfile::tempdir().unwrap();
        let rules = tmp.path().join("rules");
        std::fs::write(&rules, "- *.a\n+ b\n").unwrap();
        let f = filter(&[&format!("merge,e {}", rules.display()), "- *"]);
        assert!(ex(&f, "x.a", Side::Sender));
        assert!(!ex(&f, "b", Side::Sender));
        assert!(ex(&f, "rules", Side::Sender));
        let mut f = Filter::default();
        let missing = tmp.path().join("missing");
        let e = f.add_arg(Arg::Filter, format!(". {}", missing.display()).as_bytes());
        assert!(
            e.unwrap_err()
                .to_string()
                .starts_with("failed to open exclude file")
        );
    }
}
