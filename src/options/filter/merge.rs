//! Turning rule text into rules: the command line, rules files (`--exclude-from`,
//! `merge`), per-directory merge files (`dir-merge`, `-F`, `.cvsignore` under `-C`),
//! and rsync's built-in CVS list.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::pattern::Pattern;
use super::rules::{self, Kind, Mods, Syntax};
use super::{DirMerge, Error, MatchRule, Rule};

/// rsync's built-in CVS list (`-C`), marked perishable as rsync marks it.
const CVS_DEFAULT: &str = "RCS SCCS CVS CVS.adm RCSLOG cvslog.* tags TAGS .make.state \
    .nse_depinfo *~ #* .#* ,* _$* *$ *.old *.bak *.BAK *.orig *.rej .del-* *.a *.olb *.o \
    *.obj *.so *.exe *.Z *.elc *.ln core .svn/ .git/ .hg/ .bzr/";

/// How deep merge files may include each other: rsync's `MAX_MERGE_DEPTH`. A file
/// that merges itself stops here, as in rsync, rather than overflowing the stack.
pub(super) const MAX_DEPTH: usize = 32;

/// Where the text being read comes from, when it is a file's contents: said in
/// errors in place of the text, as rsync says it (`FILE line N`).
#[derive(Clone, Debug)]
pub(super) struct Source {
    /// The file's name; `None` when another file named it (its name is that file's
    /// text, not to be shown either).
    file: Option<String>,
    /// Where the file was named, when `file` is `None`.
    named_at: Option<String>,
    /// The line being read (`None`: a word-split file, whose rules are words).
    line: Option<usize>,
}

impl Source {
    /// rsync's `rule_src_where`.
    fn place(&self) -> String {
        match (&self.file, self.line, &self.named_at) {
            (Some(f), Some(n), _) => format!("{f} line {n}"),
            (Some(f), None, _) => f.clone(),
            (None, _, Some(at)) => format!("a file named at {at}"),
            (None, _, None) => "a file read earlier".into(),
        }
    }
}

/// Where anchored patterns of the rules being read are anchored.
#[derive(Clone, Debug)]
pub(super) enum Anchor {
    /// At the transfer root (the command line and the files it names).
    Root,
    /// At a directory of the transfer (a per-directory merge file): its path below
    /// the root, ending in `/`.
    Dir(Vec<u8>),
    /// At a directory above the transfer (a `dir-merge /name` file found while
    /// scanning the transfer's parents): its absolute path without the leading `/`,
    /// ending in `/`; such rules match the absolute path.
    Above(Vec<u8>),
}

/// rsync's `MAXPATHLEN`: no rule, and no merge file's path, is this long.
const MAX_PATH: usize = 4096;

/// Where the `dir-merge` rules being read go: `added` (their index is `base` plus
/// their position there), after `known`, which are in force already.
pub(super) struct NewMerges<'a> {
    pub added: &'a mut Vec<DirMerge>,
    pub base: usize,
    pub known: &'a [DirMerge],
}

/// Reads rules into a list.
pub(super) struct Loader<'a> {
    pub syntax: Syntax,
    pub anchor: Anchor,
    /// Where relative merge-file names are found (`None`: the working directory).
    pub dir: Option<&'a Path>,
    /// The listed source directory `dir` is, when it is one: its files are read
    /// through the source seam (see [`crate::source::read_child`]).
    pub listed: Option<&'a crate::source::SrcEntry>,
    /// Where `dir-merge` rules go (`None`: they are refused here).
    pub merges: Option<NewMerges<'a>>,
    /// Set when a `!` cleared the list: inherited rules are forgotten too.
    pub cleared: bool,
    /// How many merge files are being read, one inside the other.
    pub depth: usize,
    /// Where the text being read comes from (`None`: an argument, shown in errors).
    pub source: Option<Source>,
    /// The file about to be read was named by another file's text, which is not
    /// known any more (a per-directory merge file named in a merge file).
    pub hidden_name: bool,
    /// Which symlinks a merge file's path may lead through.
    pub trust: crate::options::trust::Trust,
    /// rsync's `--debug=FILTER` level.
    pub debug: u8,
    /// Warnings and traces for the caller.
    pub notes: Vec<super::Note>,
}

impl Loader<'_> {
    /// Where the text being read is, when it is a file's (rsync's `rule_src_where`).
    fn place(&self) -> Option<String> {
        match &self.source {
            Some(s) => Some(s.place()),
            None if self.hidden_name => Some("a file read earlier".into()),
            None => None,
        }
    }

    /// `text` (a rule, a pattern, a file name) as an error may show it: as it is when it
    /// is an argument, the place it was read at when it is a file's.
    fn shown(&self, text: &[u8]) -> String {
        match self.place() {
            None => String::from_utf8_lossy(text).into_owned(),
            Some(p) => format!("<rule from {p}>"),
        }
    }

    /// `--debug=FILTER`: rsync's `add_rule` trace, the text left out for a file's
    /// rule; level 1 only for an argument's rule that ends in whitespace (a file's
    /// is not mentioned: that would tell how its hidden text ends).
    fn trace_rule(&mut self, p: &rules::Parsed<'_>) {
        if self.debug == 0 {
            return;
        }
        let ws = p.pattern.last().is_some_and(|c| *c == b' ' || *c == b'\t');
        let own = self.place().is_none();
        let caution = own && ws && self.debug >= 1;
        if !caution && self.debug < 2 {
            return;
        }
        let text = match own {
            true => format!("{}{}", rules::prefix(p), String::from_utf8_lossy(p.pattern)),
            false => self.shown(p.pattern),
        };
        let tail = if caution {
            " -- CAUTION: trailing whitespace!"
        } else {
            ""
        };
        self.notes.push(super::Note::Debug(format!(
            "[sender] add_rule({text}){tail}"
        )));
    }

    /// Parses `text` (one `--filter` value, one line, or a word-split file's words).
    pub fn parse_str(
        &mut self,
        list: &mut Vec<Rule>,
        text: &[u8],
        template: &Mods,
    ) -> Result<(), Error> {
        let mut rest = text;
        while let Some((p, r)) = self.parse_rule(rest, template)? {
            rest = r;
            if p.pattern.len() >= MAX_PATH {
                let shown = self.shown(p.pattern);
                self.discard(Error::OverLong { shown });
                continue;
            }
            if p.kind == Kind::Match && !p.mods.cvs {
                self.trace_rule(&p);
            }
            match p.kind {
                Kind::Clear => {
                    list.clear();
                    self.cleared = true;
                    // The command line's merge files go with its list; those a
                    // per-directory file names may be in use by its siblings' rules.
                    if let Some(m) = self.merges.as_mut()
                        && m.base == 0
                    {
                        m.added.clear();
                    }
                }
                Kind::Match if p.mods.cvs => {
                    let mut t = p.mods;
                    t.no_prefixes = true;
                    t.word_split = true;
                    t.include = false;
                    // The built-in names are perishable; the user's own are not.
                    let mut perishable = t;
                    perishable.perishable = true;
                    self.parse_str(list, CVS_DEFAULT.as_bytes(), &perishable)?;
                    if let Some(home) = std::env::var_os("HOME") {
                        self.parse_file(list, &Path::new(&home).join(".cvsignore"), &t, false)?;
                    }
                    if let Some(env) = std::env::var_os("CVSIGNORE") {
                        self.parse_str(list, env.as_bytes(), &t)?;
                    }
                }
                Kind::Match => list.push(Rule::Match(self.match_rule(p.pattern, &p.mods)?)),
                Kind::Merge | Kind::DirMerge => {
                    let name: &[u8] = if p.pattern.is_empty() {
                        b".cvsignore"
                    } else {
                        p.pattern
                    };
                    if p.mods.exclude_self {
                        let base = name.rsplit(|&c| c == b'/').next().unwrap_or(name);
                        list.push(Rule::Match(self.match_rule(base, &Mods::default())?));
                    }
                    let mut mods = p.mods;
                    mods.exclude_self = false;
                    if p.kind == Kind::Merge {
                        match self.listed.filter(|d| !crate::source::is_local(d)) {
                            // A source read through a client has no local path: the
                            // file is one in the directory being read.
                            Some(d) => {
                                self.parse_child(list, d, OsStr::from_bytes(name), &mods, true)?
                            }
                            None => {
                                let path = self.resolve(name);
                                self.parse_file(list, &path, &mods, true)?;
                            }
                        }
                    } else {
                        self.add_dir_merge(list, name, mods)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The next rule of `text`; an error about a file's rule says where it is.
    fn parse_rule<'t>(
        &self,
        text: &'t [u8],
        template: &Mods,
    ) -> Result<Option<(rules::Parsed<'t>, &'t [u8])>, Error> {
        rules::parse_rule(text, template, self.syntax).map_err(|e| {
            Error::Rule(match &self.source {
                Some(s) => e.read_at(s.place()),
                None => e,
            })
        })
    }

    /// A rule left out: noted, and the reading goes on.
    fn discard(&mut self, e: Error) {
        self.notes.push(super::Note::Warn(e.to_string()));
    }

    fn add_dir_merge(
        &mut self,
        list: &mut Vec<Rule>,
        name: &[u8],
        mods: Mods,
    ) -> Result<(), Error> {
        let from_file = self.place().is_some();
        let shown = self.shown(name);
        // rsync puts the directory in front of a relative name to find the file.
        let here = match self.dir {
            Some(d) => d.as_os_str().len(),
            None => std::env::current_dir().map_or(0, |d| d.as_os_str().len()),
        };
        if !name.starts_with(b"/") && name.contains(&b'/') && here + 1 + name.len() >= MAX_PATH {
            self.discard(Error::NameOverflows { shown });
            return Ok(());
        }
        let Some(merges) = self.merges.as_mut() else {
            return Err(Error::NestedDirMerge { name: shown });
        };
        let (scan_from, base) = match name.iter().rposition(|&c| c == b'/') {
            Some(i) => {
                let dir = Path::new(OsStr::from_bytes(&name[..i.max(1)]));
                let dir = match (dir.is_absolute(), self.dir) {
                    (true, _) => dir.to_path_buf(),
                    (false, Some(d)) => d.join(dir),
                    (false, None) => std::path::absolute(dir).unwrap_or(dir.to_path_buf()),
                };
                (Some(dir), &name[i + 1..])
            }
            None => (None, name),
        };
        // rsync reads a given per-directory file name once.
        let mut all = merges.known.iter().chain(merges.added.iter());
        if all.any(|m| m.name.as_bytes() == base) {
            return Ok(());
        }
        list.push(Rule::DirMerge(merges.base + merges.added.len()));
        merges.added.push(DirMerge {
            from_file,
            name: OsStr::from_bytes(base).to_owned(),
            template: mods,
            scan_from,
        });
        Ok(())
    }

    fn resolve(&self, name: &[u8]) -> PathBuf {
        let p = Path::new(OsStr::from_bytes(name));
        match self.dir {
            Some(d) => d.join(p),
            None => p.to_path_buf(),
        }
    }

    pub(super) fn match_rule(&self, pattern: &[u8], mods: &Mods) -> Result<MatchRule, Error> {
        let anchored = pattern.starts_with(b"/");
        let (prefix, abs): (&[u8], bool) = match &self.anchor {
            Anchor::Dir(p) if anchored && !mods.abs_path => (p, false),
            Anchor::Above(p) if anchored => (p, true),
            _ => (b"", mods.abs_path),
        };
        let compiled =
            Pattern::new(pattern, prefix, mods.negate).map_err(|source| Error::Pattern {
                pattern: self.shown(pattern),
                source,
            })?;
        Ok(MatchRule {
            pattern: compiled,
            shown: self.shown(pattern).into(),
            include: mods.include,
            sender: mods.sender || !mods.receiver,
            receiver: mods.receiver || !mods.sender,
            perishable: mods.perishable,
            xattr: mods.xattr,
            abs,
        })
    }

    /// Reads a rules file (`-` is stdin): lines (or words, with `w`), skipping blank
    /// lines and `#`/`;` comments. A missing file is an error only when `required`.
    pub fn parse_file(
        &mut self,
        list: &mut Vec<Rule>,
        path: &Path,
        template: &Mods,
        required: bool,
    ) -> Result<(), Error> {
        let shown = self.opening(crate::report::Escaped(path))?;
        let text = if path.as_os_str() == "-" && self.merges.is_some() {
            let mut v = Vec::new();
            io::stdin().lock().read_to_end(&mut v).map(|_| v)
        } else {
            // A directory deeper than PATH_MAX is listed; its merge file is read too.
            // A symlink another user owns is not followed (see `trust`).
            let trust = self.trust;
            crate::source::short_path(path, |p| crate::options::trust::read(trust, p))
        };
        self.parse_read(list, text, shown, template, required)
    }

    /// How the file about to be read is shown in errors, or the error of one merge too
    /// deep. A name read from a file is that file's text: neither it nor whether it
    /// exists is shown; where it was named is, when that is known.
    fn opening(&self, path: impl std::fmt::Display) -> Result<String, Error> {
        let shown = match self.place().is_some() {
            false => path.to_string(),
            true => self.shown(b""),
        };
        match self.depth >= MAX_DEPTH {
            true => Err(Error::Depth { at: shown }),
            false => Ok(shown),
        }
    }

    /// Reads the file `name` in the listed source directory `dir` as [`Self::parse_file`]
    /// reads a path, through the source seam ([`crate::source::read_child`]); errors
    /// name it by the directory's path.
    pub fn parse_child(
        &mut self,
        list: &mut Vec<Rule>,
        dir: &crate::source::SrcEntry,
        name: &OsStr,
        template: &Mods,
        required: bool,
    ) -> Result<(), Error> {
        let shown = self.opening(crate::report::Escaped(dir.path.join(name)))?;
        let text = crate::source::read_child(dir, name, self.trust)
            .and_then(|t| t.ok_or_else(|| io::ErrorKind::NotFound.into()));
        self.parse_read(list, text, shown, template, required)
    }

    /// Parses the text read for [`Self::parse_file`] or [`Self::parse_child`] (or why it
    /// could not be read).
    fn parse_read(
        &mut self,
        list: &mut Vec<Rule>,
        text: io::Result<Vec<u8>>,
        shown: String,
        template: &Mods,
        required: bool,
    ) -> Result<(), Error> {
        let named_at = self.source.as_ref().map(Source::place);
        let hidden = self.place().is_some();
        let text = match text {
            Ok(t) => t,
            // A per-directory merge file that is a link another user owns is read as
            // absent (rsync), not as an error that would name what it points to.
            Err(e)
                if !required
                    && (e.kind() == io::ErrorKind::NotFound
                        || crate::options::trust::is_refusal(&e)) =>
            {
                return Ok(());
            }
            Err(e) => {
                return Err(Error::Open {
                    cause: (!hidden).then_some(e),
                    name: shown,
                    include: template.include,
                    required,
                });
            }
        };
        let inner = Source {
            file: (!hidden).then_some(shown),
            named_at,
            line: (!template.word_split).then_some(0),
        };
        let outer = self.source.replace(inner);
        self.depth += 1;
        let res = self.parse_text(list, &text, template);
        self.depth -= 1;
        self.source = outer;
        res
    }

    /// The contents of a rules file.
    pub fn parse_text(
        &mut self,
        list: &mut Vec<Rule>,
        text: &[u8],
        template: &Mods,
    ) -> Result<(), Error> {
        let mut rest = text;
        while !rest.is_empty() {
            // rsync ends a line at \n, \r or \r\n.
            let end = rest
                .iter()
                .position(|&c| c == b'\n' || c == b'\r')
                .unwrap_or(rest.len());
            let l = &rest[..end];
            let crlf = rest[end..].starts_with(b"\r\n");
            rest = &rest[(end + 1 + usize::from(crlf)).min(rest.len())..];
            if let Some(Source { line: Some(n), .. }) = &mut self.source {
                *n += 1;
            }
            if l.is_empty() {
                continue;
            }
            // Comments only where lines are rules: a word-split file has none.
            let comment = l.starts_with(b"#") || l.starts_with(b";");
            if template.word_split || !comment {
                self.parse_str(list, l, template)?;
            }
        }
        Ok(())
    }
}
