//! Per-directory rules: the [`Scope`] of each source directory, built from its
//! parent's and the merge files found in it (and, for the top, in the directories
//! above the transfer that a `dir-merge /NAME` rule names).

use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::merge::{Anchor, Loader, NewMerges};
use super::rules::Syntax;
use super::{Chain, DirMerge, Error, Filter, Scope};
use crate::source::SrcEntry;

/// Where a merge file is read.
#[derive(Clone, Copy)]
enum Dir<'a> {
    /// A listed source directory: through the source seam.
    Listed(&'a SrcEntry),
    /// A local directory above the transfer: by path.
    Above(&'a Path),
}

impl Filter {
    /// The scope of the transfer's top: `transfer` is the directory names are
    /// relative to (`SRC` for `SRC/`, its parent for `SRC`), `first_dir` the first
    /// source directory listed, whose parents are scanned for `dir-merge /NAME` files
    /// (a local one's: a source read through a client has no parents to scan); with
    /// `contents` (`SRC/`) its own merge files are read too.
    pub fn root_scope(
        &self,
        transfer: &Path,
        first_dir: Option<&SrcEntry>,
        contents: bool,
    ) -> (Arc<Scope>, Vec<Error>) {
        let mut base = clean_absolute(transfer).into_os_string().into_vec();
        base.remove(0);
        if !base.is_empty() {
            base.push(b'/');
        }
        let mut scope = Scope {
            base: base.into(),
            merges: self.merges.clone().into(),
            lists: vec![None; self.merges.len()],
        };
        let mut errors = Vec::new();
        if let Some(first) = first_dir.filter(|d| crate::source::is_local(d)) {
            let first = clean_absolute(&first.path);
            for (i, m) in self.merges.iter().enumerate() {
                let Some(from) = &m.scan_from else { continue };
                if m.template.no_inherit || !first.starts_with(from) {
                    continue;
                }
                let mut dir = from.clone();
                let below: Vec<_> = first.strip_prefix(from).unwrap().components().collect();
                for c in below {
                    let mut anchor = dir.clone().into_os_string().into_vec();
                    anchor.remove(0);
                    if !anchor.is_empty() {
                        anchor.push(b'/');
                    }
                    let next = scope.lists[i].take();
                    let above = Dir::Above(&dir);
                    scope.lists[i] =
                        self.read_merge(m, above, Anchor::Above(anchor), next, &mut errors, None);
                    dir.push(c);
                }
            }
        }
        let scope = Arc::new(scope);
        match first_dir {
            Some(first) if contents => {
                let (s, mut e) = self.enter(&scope, first, Path::new(""));
                errors.append(&mut e);
                (s, errors)
            }
            _ => (scope, errors),
        }
    }

    /// The scope of source directory `dir` (at `rel` below the transfer root), inside
    /// `parent`'s: each per-directory merge file found in it goes before what the
    /// parent's gave (which it inherits unless `n`). A `dir-merge` rule in one of them
    /// adds a merge file for this directory and those below it, read here too (and,
    /// when its name leads to a directory above this one, in that directory and each
    /// one down to here first, as rsync does).
    pub fn enter(
        &self,
        parent: &Arc<Scope>,
        dir: &SrcEntry,
        rel: &Path,
    ) -> (Arc<Scope>, Vec<Error>) {
        if parent.merges.is_empty() {
            return (parent.clone(), Vec::new());
        }
        let mut prefix = rel.as_os_str().as_bytes().to_vec();
        if !prefix.is_empty() {
            prefix.push(b'/');
        }
        let mut errors = Vec::new();
        let known = &parent.merges[..];
        let mut added: Vec<super::DirMerge> = Vec::new();
        let mut lists = Vec::with_capacity(known.len());
        let mut i = 0;
        while i < known.len() + added.len() {
            let m = known
                .get(i)
                .unwrap_or_else(|| &added[i - known.len()])
                .clone();
            let inherited = match (m.template.no_inherit, i < known.len()) {
                (true, _) => None,
                (false, true) => parent.lists.get(i).cloned().flatten(),
                (false, false) => self.scan_down(&m, dir, &mut errors),
            };
            let new = NewMerges {
                added: &mut added,
                base: known.len(),
                known,
            };
            let anchor = Anchor::Dir(prefix.clone());
            let at = Dir::Listed(dir);
            lists.push(self.read_merge(&m, at, anchor, inherited, &mut errors, Some(new)));
            i += 1;
        }
        let merges = match added.is_empty() {
            true => parent.merges.clone(),
            false => known.iter().cloned().chain(added).collect(),
        };
        let scope = Scope {
            base: parent.base.clone(),
            merges,
            lists,
        };
        (Arc::new(scope), errors)
    }

    /// A merge file a `dir-merge` rule named in `dir`, whose name leads to a directory
    /// above it: its rules from that directory and each one down to `dir`'s parent
    /// (for a local source: one read through a client has no path to scan by).
    fn scan_down(
        &self,
        m: &super::DirMerge,
        dir: &SrcEntry,
        errors: &mut Vec<Error>,
    ) -> Option<Arc<Chain>> {
        if !crate::source::is_local(dir) {
            return None;
        }
        let from = clean_absolute(m.scan_from.as_ref()?);
        let here = clean_absolute(&dir.path);
        if from == here || !here.starts_with(&from) {
            return None;
        }
        let mut at = from.clone();
        let mut chain = None;
        for c in here.strip_prefix(&from).unwrap().components() {
            let mut anchor = at.clone().into_os_string().into_vec();
            anchor.remove(0);
            if !anchor.is_empty() {
                anchor.push(b'/');
            }
            chain = self.read_merge(
                m,
                Dir::Above(&at),
                Anchor::Above(anchor),
                chain,
                errors,
                None,
            );
            at.push(c);
        }
        chain
    }

    /// Reads `m`'s file in `dir` in front of `inherited`.
    fn read_merge(
        &self,
        m: &DirMerge,
        dir: Dir<'_>,
        anchor: Anchor,
        inherited: Option<Arc<Chain>>,
        errors: &mut Vec<Error>,
        merges: Option<NewMerges<'_>>,
    ) -> Option<Arc<Chain>> {
        let mut loader = Loader {
            syntax: Syntax {
                old_prefixes: false,
                delete_excluded: self.delete_excluded,
            },
            anchor,
            dir: Some(match dir {
                Dir::Listed(d) => &d.path,
                Dir::Above(p) => p,
            }),
            listed: match dir {
                Dir::Listed(d) => Some(d),
                Dir::Above(_) => None,
            },
            merges,
            cleared: false,
            depth: 0,
            source: None,
            hidden_name: m.from_file,
            trust: self.trust,
            // Traces are the command line's; a merge file's own text never is one.
            debug: 0,
            notes: Vec::new(),
        };
        let mut local = Vec::new();
        let read = match dir {
            Dir::Listed(d) => loader.parse_child(&mut local, d, &m.name, &m.template, false),
            Dir::Above(p) => loader.parse_file(&mut local, &p.join(&m.name), &m.template, false),
        };
        if let Err(e) = read {
            errors.push(e);
        }
        for note in std::mem::take(&mut loader.notes) {
            if let super::Note::Warn(w) = note {
                errors.push(Error::Noted(w));
            }
        }
        let next = if loader.cleared { None } else { inherited };
        if local.is_empty() {
            return next;
        }
        Some(Arc::new(Chain { rules: local, next }))
    }
}

/// `path` made absolute with `.` and `..` folded, as rsync's `clean_fname` does.
fn clean_absolute(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::from("/");
    for c in abs.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}
