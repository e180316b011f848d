//! The one check every entry name passes before a destination acts on it.
//!
//! A [`Destination`](super::Destination) names its targets as a directory plus an
//! entry name, which is only safe while the name *is* one entry: a `..`, an empty name
//! or one holding a `/` sends an `*at` call (or a path built from names, such as
//! `--backup-dir`'s) out of the directory it was given, which is how a hostile
//! sender or server writes outside DEST (rsync's CVE-2024-12087). The names are
//! meant to be checked where they come in, off the wire or out of a listing; this
//! check is the backstop, so that no future source of names can reopen that hole.
//! It runs on every call, so it is a length test and one pass over a short name.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use super::{Error, Result};
#[cfg(test)]
use crate::name::NAME_MAX;
use crate::name::{check, escape};

/// `name` when it is a single path component ([`crate::name::check`]): not empty,
/// not `.` or `..`, without `/` or NUL, at most `NAME_MAX` bytes. Anything else is
/// the entry's error (kind `InvalidInput`) naming it, and nothing is done with it.
#[inline]
pub fn component(name: &OsStr) -> Result<&OsStr> {
    match check(name.as_bytes()) {
        Ok(()) => Ok(name),
        Err(why) => Err(refused("name", name.as_bytes(), &why.to_string())),
    }
}

/// `rel` when it is made of names alone (each one a [`component`]): a path below
/// DEST built from entry names, about to be joined to a directory the user named
/// (`--backup-dir`, `--partial-dir`, `--link-dest` and its kin). The user's own
/// path may climb with `..`; the part built from names must not, nor be absolute
/// (joining an absolute path replaces the base). The empty path is DEST itself.
pub fn relative(rel: &Path) -> Result<&Path> {
    for c in rel.components() {
        let why = match c {
            Component::Normal(name) => match check(name.as_bytes()) {
                Ok(()) => continue,
                Err(why) => why.to_string(),
            },
            Component::RootDir | Component::Prefix(_) => "not relative (absolute)".into(),
            Component::ParentDir => "not made of names alone (has ..)".into(),
            Component::CurDir => "not made of names alone (has .)".into(),
        };
        return Err(refused("path", rel.as_os_str().as_bytes(), &why));
    }
    Ok(rel)
}

#[cold]
fn refused(what: &str, b: &[u8], why: &str) -> Error {
    Error::Entry(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("refusing the {what} \"{}\": {why}", escape(b)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(r: Result<impl std::fmt::Debug>) -> String {
        match r {
            Err(Error::Entry(e)) => {
                assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
                e.to_string()
            }
            other => panic!("not refused as the entry's: {other:?}"),
        }
    }

    #[test]
    fn only_single_components_pass() {
        let long = "x".repeat(NAME_MAX);
        for ok in ["a", "...", ".a", "a b", "\x1b[31m", "\\", long.as_str()] {
            assert_eq!(component(OsStr::new(ok)).unwrap(), ok);
        }
        assert!(component(OsStr::from_bytes(b"\xff\xfe")).is_ok());
        let long = "x".repeat(NAME_MAX + 1);
        for (bad, why) in [
            ("", "empty"),
            (".", "names the directory itself or its parent"),
            ("..", "names the directory itself or its parent"),
            ("../x", "contains /: not a single path component"),
            ("a/b", "contains /: not a single path component"),
            ("/etc/passwd", "contains /: not a single path component"),
            ("a/", "contains /: not a single path component"),
            ("a\0b", "contains a NUL byte"),
            (long.as_str(), "longer than NAME_MAX (255)"),
        ] {
            let m = message(component(OsStr::new(bad)));
            assert!(m.ends_with(why), "{bad:?}: {m}");
        }
    }

    #[test]
    fn a_refused_name_is_shown_escaped() {
        let m = message(component(OsStr::from_bytes(b"\x1b[31m/\xff\0")));
        assert_eq!(
            m,
            "refusing the name \"\\#033[31m/\\#377\\#000\": contains /: not a single path \
             component"
        );
        let m = message(component(OsStr::new("../x")));
        assert_eq!(
            m,
            "refusing the name \"../x\": contains /: not a single path component"
        );
        assert_eq!(escape(b"a\\#123\tb\\x"), "a\\#134#123\tb\\x");
    }

    #[test]
    fn a_relative_path_is_names_alone() {
        for ok in ["", "a", "a/b/c", "a//b/", "\x1b[31m/x"] {
            assert_eq!(relative(Path::new(ok)).unwrap(), Path::new(ok));
        }
        let long = format!("a/{}", "x".repeat(NAME_MAX + 1));
        for (bad, why) in [
            ("/etc", "(absolute)"),
            ("..", "(has ..)"),
            ("a/../../b", "(has ..)"),
            ("./a", "(has .)"),
            ("a/b\0c", "contains a NUL byte"),
            (long.as_str(), "longer than NAME_MAX (255)"),
        ] {
            let m = message(relative(Path::new(bad)));
            assert!(m.starts_with("refusing the path \""), "{bad:?}: {m}");
            assert!(m.ends_with(why), "{bad:?}: {m}");
        }
    }
}
