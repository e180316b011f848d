//! Per-directory rules: the [`Scope`] of each source directory, built from its
//! parent's and the merge files found in it (and, for the top, in the directories
//! above the transfer that a `dir-merge /NAME` rule names).

use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::merge::{Anchor, Loader};
use super::rules::Syntax;
use super::{Chain, DirMerge, Error, Filter, Scope};

impl Filter {
    /// The scope of the transfer's top: `transfer` is the directory names are
    /// relative to (`SRC` for `SRC/`, its parent for `SRC`), `first_dir` the first
    /// source directory listed, whose parents are scanned for `dir-merge /NAME` files;
    /// with `contents` (`SRC/`) its own merge files are read too.
    pub fn root_scope(
        &self,
        transfer: &Path,
        first_dir: Option<&Path>,
        contents: bool,
    ) -> (Arc<Scope>, Vec<Error>) {
        let mut base = clean_absolute(transfer).into_os_string().into_vec();
        base.remove(0);
        if !base.is_empty() {
            base.push(b'/');
        }
        let mut scope = Scope {
            base: base.into(),
            lists: vec![None; self.merges.len()],
        };
        let mut errors = Vec::new();
        if let Some(first) = first_dir {
            let first = clean_absolute(first);
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
                    scope.lists[i] =
                        self.read_merge(m, &dir, Anchor::Above(anchor), next, &mut errors);
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
    /// parent's gave (which it inherits unless `n`).
    pub fn enter(&self, parent: &Arc<Scope>, dir: &Path, rel: &Path) -> (Arc<Scope>, Vec<Error>) {
        if self.merges.is_empty() {
            return (parent.clone(), Vec::new());
        }
        let mut prefix = rel.as_os_str().as_bytes().to_vec();
        if !prefix.is_empty() {
            prefix.push(b'/');
        }
        let mut errors = Vec::new();
        let lists = self
            .merges
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let inherited = match m.template.no_inherit {
                    true => None,
                    false => parent.lists.get(i).cloned().flatten(),
                };
                self.read_merge(m, dir, Anchor::Dir(prefix.clone()), inherited, &mut errors)
            })
            .collect();
        let scope = Scope {
            base: parent.base.clone(),
            lists,
        };
        (Arc::new(scope), errors)
    }

    /// Reads `m`'s file in `dir` in front of `inherited`.
    fn read_merge(
        &self,
        m: &DirMerge,
        dir: &Path,
        anchor: Anchor,
        inherited: Option<Arc<Chain>>,
        errors: &mut Vec<Error>,
    ) -> Option<Arc<Chain>> {
        let mut loader = Loader {
            syntax: Syntax {
                old_prefixes: false,
                delete_excluded: self.delete_excluded,
            },
            anchor,
            dir: Some(dir),
            merges: None,
            cleared: false,
            depth: 0,
            source: None,
        };
        let mut local = Vec::new();
        if let Err(e) = loader.parse_file(&mut local, &dir.join(&m.name), &m.template, false) {
            errors.push(e);
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
