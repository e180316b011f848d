//! rsync's `-R` and `--files-from`: the paths named, and the directories above them.
//!
//! With `-R` a source `base/./a/b` (or `a/b`, anchored at the current directory) is
//! written to `DEST/a/b`, and `a` travels too as an *implied* directory: created with
//! its source attributes, but only `b` is entered. The named paths are gathered into a
//! tree, [`Named`], whose inner nodes are the implied directories; the engine walks it
//! instead of listing a source directory wherever a node has only implied contents. It
//! holds the names given (as rsync's file list does), not the trees below them: those
//! are listed as the engine goes, so memory stays bounded by the list, not the tree.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// One path component of the named paths.
#[derive(Debug, Default)]
pub struct Named {
    /// Where it is in the source.
    pub src: PathBuf,
    /// Named itself (not only implied by a path below it).
    pub named: bool,
    /// Named with a trailing slash: its top level is sent even without `-r`.
    pub contents: bool,
    /// The named paths below it, by name.
    pub children: BTreeMap<OsString, Arc<Named>>,
}

impl Named {
    /// Adds `rel` (found at `base/rel` in the source); `contents` as for a trailing `/`.
    /// The first source given for a name is the one kept, as rsync keeps the first of
    /// duplicate names. `..` components are dropped from the destination path: nothing
    /// is written above DEST.
    pub fn add(&mut self, base: &Path, rel: &Path, contents: bool) {
        let mut node = self;
        let mut src = base.to_path_buf();
        for c in rel.components() {
            let Component::Normal(name) = c else {
                continue;
            };
            src.push(name);
            let child = node.children.entry(name.to_owned()).or_insert_with(|| {
                Arc::new(Named {
                    src: src.clone(),
                    ..Named::default()
                })
            });
            node = Arc::get_mut(child).expect("the tree is built before it is shared");
        }
        // The path as given, `..` and all, is where a named entry is read from.
        if !node.named {
            node.src = base.join(rel);
        }
        node.named = true;
        node.contents |= contents;
    }

    /// Adds a source operand as `-R` names it.
    pub fn add_operand(&mut self, operand: &Path) {
        let (base, rel) = split_anchor(operand);
        self.add(&base, &rel, names_contents(operand));
    }

    /// Adds one `--files-from` name, relative to `source` (a leading `/` too); without
    /// `-R` only its last component is recreated. A name that stands for a directory's
    /// contents at DEST's top (`.` with `-R`, `DIR/` without) is not added: it is
    /// returned, as the `SRC/` operand it amounts to.
    pub fn add_listed(&mut self, source: &Path, name: &Path, relative: bool) -> Option<PathBuf> {
        let b = name.as_os_str().as_encoded_bytes();
        let start = b.iter().position(|&c| c != b'/').unwrap_or(b.len());
        // SAFETY: split after ASCII bytes of a string that came from an OsStr.
        let name = Path::new(unsafe { std::ffi::OsStr::from_encoded_bytes_unchecked(&b[start..]) });
        let contents = names_contents(name);
        if (relative && is_anchor_only(name)) || (!relative && contents) {
            let mut operand = source.join(name).into_os_string();
            if !names_contents(Path::new(&operand)) {
                operand.push("/");
            }
            return Some(operand.into());
        }
        if relative {
            let (base, rel) = split_anchor(name);
            self.add(&source.join(base), &rel, contents);
        } else {
            let parent = name.parent().unwrap_or(Path::new(""));
            let last = name.file_name().map(Path::new).unwrap_or(Path::new(""));
            self.add(&source.join(parent), last, contents);
        }
        None
    }
}

/// Splits `base/./rel` at its first `/./`; a path without one is all `rel`, from `/` or
/// the current directory.
pub fn split_anchor(p: &Path) -> (PathBuf, PathBuf) {
    let b = p.as_os_str().as_encoded_bytes();
    if let Some(at) = b.windows(3).position(|w| w == b"/./") {
        // SAFETY: split at ASCII bytes of a string that came from an OsStr.
        let (base, rel) = unsafe {
            (
                std::ffi::OsStr::from_encoded_bytes_unchecked(&b[..at + 1]),
                std::ffi::OsStr::from_encoded_bytes_unchecked(&b[at + 3..]),
            )
        };
        return (PathBuf::from(base), PathBuf::from(rel));
    }
    let base = if p.has_root() { "/" } else { "" };
    (PathBuf::from(base), p.to_path_buf())
}

/// Whether `p` has no component left to recreate (`src/./`, `.`): it names the
/// contents of a directory, as a plain `SRC/` does.
pub fn is_anchor_only(p: &Path) -> bool {
    !split_anchor(p)
        .1
        .components()
        .any(|c| matches!(c, Component::Normal(_)))
}

/// Whether `p` ends in `/` or `/.`: it names a directory's contents.
pub fn names_contents(p: &Path) -> bool {
    let b = p.as_os_str().as_encoded_bytes();
    b.ends_with(b"/") || b.ends_with(b"/.")
}

/// rsync's reading of a `--files-from` list: names end at a newline (a NUL with
/// `--from0`); without `--from0` a trailing CR is dropped; empty names and names
/// starting with `#` or `;` are skipped (with `--from0` too, as rsync does). A `..`
/// cannot climb above SRC: it is clamped there (see [`clamp_dot_dots`]).
pub fn parse_list(data: &[u8], from0: bool) -> Vec<OsString> {
    use std::os::unix::ffi::OsStringExt;
    let sep = if from0 { 0 } else { b'\n' };
    data.split(|&c| c == sep)
        .map(|l| {
            if from0 {
                l
            } else {
                l.strip_suffix(b"\r").unwrap_or(l)
            }
        })
        .filter(|l| !l.is_empty() && !matches!(l[0], b'#' | b';'))
        .map(|l| OsString::from_vec(clamp_dot_dots(l)))
        .collect()
}

/// A listed name with its `..` resolved inside SRC, as rsync sanitizes a
/// `--files-from` name: each `..` drops the component before it, and one with
/// nothing before it is dropped (`../keep` is SRC's `keep`, never its sibling). A
/// name without `..` is kept byte for byte.
pub fn clamp_dot_dots(name: &[u8]) -> Vec<u8> {
    let parts: Vec<&[u8]> = name.split(|&c| c == b'/').collect();
    if !parts.contains(&&b".."[..]) {
        return name.to_vec();
    }
    let mut kept: Vec<&[u8]> = Vec::new();
    for part in parts.iter().filter(|p| !p.is_empty()) {
        if *part == b".." {
            kept.pop();
        } else {
            kept.push(part);
        }
    }
    let mut out = Vec::with_capacity(name.len());
    if name.starts_with(b"/") {
        out.push(b'/');
    }
    out.extend_from_slice(&kept.join(&b'/'));
    if kept.is_empty() {
        out = b".".to_vec();
    }
    if name.ends_with(b"/") && !out.ends_with(b"/") {
        out.push(b'/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_dot_dots_stay_inside_the_source() {
        let c = |n: &str| String::from_utf8(clamp_dot_dots(n.as_bytes())).unwrap();
        assert_eq!(c("../keep"), "keep");
        assert_eq!(c("a/../../b/"), "b/");
        assert_eq!(c("/x/../y"), "/y");
        assert_eq!(c(".."), ".");
        assert_eq!(c("a//b/./c"), "a//b/./c");
        assert_eq!(c("a..b/..c"), "a..b/..c");
    }

    #[test]
    fn anchors_split_the_path() {
        let s = |p: &str| {
            let (a, b) = split_anchor(Path::new(p));
            (a.display().to_string(), b.display().to_string())
        };
        assert_eq!(s("src/./a/b"), ("src/".into(), "a/b".into()));
        assert_eq!(s("/x/y"), ("/".into(), "/x/y".into()));
        assert_eq!(s("x/y/"), ("".into(), "x/y/".into()));
        assert!(is_anchor_only(Path::new("src/./")));
        assert!(!is_anchor_only(Path::new("src/./a")));
    }

    #[test]
    fn names_make_a_tree_of_implied_directories() {
        let mut t = Named::default();
        t.add_operand(Path::new("s/./a/b/f"));
        t.add_operand(Path::new("t/./a/c/"));
        t.add_operand(Path::new("/abs/../z"));
        let a = &t.children[&OsString::from("a")];
        assert!(!a.named);
        assert_eq!(a.src, Path::new("s/a"));
        assert!(a.children[&OsString::from("b")].children[&OsString::from("f")].named);
        let c = &a.children[&OsString::from("c")];
        assert!(c.named && c.contents);
        assert_eq!(c.src, Path::new("t/a/c"));
        assert!(t.children.contains_key(&OsString::from("abs")));
        assert_eq!(
            t.children[&OsString::from("abs")].children[&OsString::from("z")].src,
            Path::new("/abs/../z")
        );
    }

    #[test]
    fn lists_are_read_like_rsync() {
        assert_eq!(
            parse_list(b"#c\n;c\n\na\r\nb c\n", false),
            vec![OsString::from("a"), OsString::from("b c")]
        );
        assert_eq!(parse_list(b"#a\0b\n\0", true), vec![OsString::from("b\n")]);
    }
}
