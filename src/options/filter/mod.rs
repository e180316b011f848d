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
    /// A `dir-merge` rule inside a per-directory merge file.
    #[error("dir-merge {name} inside a per-directory merge file is not supported (rule ignored)")]
    NestedDirMerge { name: String },
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
    /// One chain per [`Filter::merges`] entry.
    lists: Vec<Option<Arc<Chain>>>,
}

/// The filter rules of a run.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    rules: Vec<Rule>,
    merges: Vec<DirMerge>,
    delete_excluded: bool,
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

    fn loader(&mut self, old_prefixes: bool) -> (Loader<'_>, &mut Vec<Rule>) {
        let loader = Loader {
            syntax: Syntax {
                old_prefixes,
                delete_excluded: self.delete_excluded,
            },
            anchor: Anchor::Root,
            dir: None,
            merges: Some(&mut self.merges),
            cleared: false,
            depth: 0,
            source: None,
        };
        (loader, &mut self.rules)
    }

    /// Adds one command-line rule.
    pub fn add_arg(&mut self, arg: Arg, text: &[u8]) -> Result<(), Error> {
        let template = Mods {
            include: arg == Arg::Include,
            ..Mods::default()
        };
        let (mut loader, list) = self.loader(arg != Arg::Filter);
        loader.parse_str(list, text, &template)
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
        let (mut loader, list) = self.loader(true);
        loader.parse_file(list, path, &template, true)
    }

    /// Adds the text of a rules file read elsewhere (tests, stdin already read).
    pub fn add_text(&mut self, text: &[u8], include: bool) -> Result<(), Error> {
        let template = Mods {
            include,
            ..Mods::default()
        };
        let (mut loader, list) = self.loader(true);
        loader.parse_text(list, text, &template)
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
        let test = |m: &MatchRule| -> Option<bool> {
            let applies = match side {
                Side::Sender => m.sender,
                Side::Receiver => m.receiver,
            };
            if !applies || m.xattr || (skip_perishable && m.perishable) {
                return None;
            }
            let hit = if m.abs {
                let mut p = scope.base.to_vec();
                p.extend_from_slice(rel);
                m.pattern.matches(&p, is_dir)
            } else {
                m.pattern.matches(rel, is_dir)
            };
            hit.then_some(m.include)
        };
        for rule in &self.rules {
            match rule {
                Rule::Match(m) => {
                    if let Some(v) = test(m) {
                        return Some(v);
                    }
                }
                Rule::DirMerge(i) => {
                    let mut chain = scope.lists.get(*i).and_then(|c| c.as_deref());
                    while let Some(c) = chain {
                        for r in &c.rules {
                            if let Rule::Match(m) = r
                                && let Some(v) = test(m)
                            {
                                return Some(v);
                            }
                        }
                        chain = c.next.as_deref();
                    }
                }
            }
        }
        None
    }
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
