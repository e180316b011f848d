//! Turning rule text into rules: the command line, rules files (`--exclude-from`,
//! `merge`), per-directory merge files (`dir-merge`, `-F`, `.cvsignore` under `-C`),
//! and rsync's built-in CVS list.

use std::ffi::OsStr;
use std::io::{self, BufRead, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::pattern::Pattern;
use super::rules::{self, Kind, Mods, Syntax};
use super::{DirMerge, Error, MatchRule, Rule};

/// rsync's built-in CVS list (`-C`), marked perishable as rsync marks it.
const CVS_DEFAULT: &str = "RCS SCCS CVS CVS.adm RCSLOG cvslog.* tags TAGS .make.state \
    .nse_depinfo *~ #* .#* ,* _$* *$ *.old *.bak *.BAK *.orig *.rej .del-* *.a *.olb *.o \
    *.obj *.so *.exe *.Z *.elc *.ln core .svn/ .git/ .hg/ .bzr/";

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

/// Reads rules into a list.
pub(super) struct Loader<'a> {
    pub syntax: Syntax,
    pub anchor: Anchor,
    /// Where relative merge-file names are found (`None`: the working directory).
    pub dir: Option<&'a Path>,
    /// The top-level list's per-directory merge files, when `dir-merge` is allowed.
    pub merges: Option<&'a mut Vec<DirMerge>>,
    /// Set when a `!` cleared the list: inherited rules are forgotten too.
    pub cleared: bool,
}

impl Loader<'_> {
    /// Parses `text` (one `--filter` value, one line, or a word-split file's words).
    pub fn parse_str(
        &mut self,
        list: &mut Vec<Rule>,
        text: &[u8],
        template: &Mods,
    ) -> Result<(), Error> {
        let mut rest = text;
        while let Some((p, r)) = rules::parse_rule(rest, template, self.syntax)? {
            rest = r;
            match p.kind {
                Kind::Clear => {
                    list.clear();
                    self.cleared = true;
                    if let Some(m) = self.merges.as_deref_mut() {
                        m.clear();
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
                        let path = self.resolve(name);
                        self.parse_file(list, &path, &mods, true)?;
                    } else {
                        self.add_dir_merge(list, name, mods)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn add_dir_merge(
        &mut self,
        list: &mut Vec<Rule>,
        name: &[u8],
        mods: Mods,
    ) -> Result<(), Error> {
        let Some(merges) = self.merges.as_deref_mut() else {
            return Err(Error::NestedDirMerge {
                name: String::from_utf8_lossy(name).into_owned(),
            });
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
        if merges.iter().any(|m| m.name.as_bytes() == base) {
            return Ok(());
        }
        list.push(Rule::DirMerge(merges.len()));
        merges.push(DirMerge {
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
                pattern: String::from_utf8_lossy(pattern).into_owned(),
                source,
            })?;
        Ok(MatchRule {
            pattern: compiled,
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
        let text = if path.as_os_str() == "-" && self.merges.is_some() {
            let mut v = Vec::new();
            io::stdin().lock().read_to_end(&mut v).map(|_| v)
        } else {
            // A directory deeper than PATH_MAX is listed; its merge file is read too.
            // A symlink another user owns is not followed (see `trust`).
            crate::walk::short_path(path, crate::options::trust::read)
        };
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
            Err(source) => {
                return Err(Error::Open {
                    path: path.to_path_buf(),
                    include: template.include,
                    source,
                });
            }
        };
        self.parse_text(list, &text, template)
    }

    /// The contents of a rules file.
    pub fn parse_text(
        &mut self,
        list: &mut Vec<Rule>,
        text: &[u8],
        template: &Mods,
    ) -> Result<(), Error> {
        let mut lines = text;
        let mut line = Vec::new();
        loop {
            line.clear();
            if lines.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
                return Ok(());
            }
            // rsync ends a line at either \n or \r.
            for l in line.split(|&c| c == b'\n' || c == b'\r') {
                if l.is_empty() {
                    continue;
                }
                // Comments only where lines are rules: a word-split file has none.
                let comment = l.starts_with(b"#") || l.starts_with(b";");
                if template.word_split || !comment {
                    self.parse_str(list, l, template)?;
                }
            }
        }
    }
}
