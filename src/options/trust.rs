//! Paths the command line names (`--exclude-from FILE`, DEST) must not lead through a
//! symlink someone else controls.
//!
//! A symlink owned by another user (neither root nor us) in such a path could be
//! pointed, between our check and our use or before it, into a tree that is not
//! theirs to give: root reading "their" exclude file would read any file, and a sync
//! into "their" directory would write anywhere. rsync has no such check for these
//! paths (its own protections cover the receiver's files inside DEST, which nfsync
//! gets by opening every directory below DEST without following symlinks); nfsync
//! refuses, with the link named. The kernel's `fs.protected_symlinks` is the same rule,
//! limited to sticky world-writable directories.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// Why a path was refused.
#[derive(Debug, thiserror::Error)]
pub enum Untrusted {
    /// A symlink on the way belongs to someone else.
    #[error("{link}: symlink owned by uid {uid} (neither root nor us) is not followed")]
    ForeignLink {
        /// The link, as resolved so far.
        link: PathBuf,
        /// Its owner.
        uid: u32,
    },
}

/// Most links resolved in one path, as the kernel's `ELOOP` limit.
const MAX_LINKS: usize = 40;

/// Resolves `path` one component at a time, as the kernel would, refusing at the
/// first symlink owned by anyone but root and `euid`. A component that cannot be
/// looked at ends the check: DEST may still have to be created (its missing parts
/// are ours), and any other failure is the use's to report, in its own words.
pub fn check(path: &Path, euid: u32) -> Result<(), Untrusted> {
    let mut todo: Vec<OsString> = Vec::new();
    let start = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        match std::env::current_dir() {
            Ok(d) => d,
            Err(_) => return Ok(()),
        }
    };
    push_front(&mut todo, path);
    let mut at = start;
    let mut links = 0;
    while let Some(c) = todo.pop() {
        if c == ".." {
            at.pop();
            continue;
        }
        let next = at.join(&c);
        let Ok(m) = fs::symlink_metadata(&next) else {
            return Ok(());
        };
        if !m.file_type().is_symlink() {
            at = next;
            continue;
        }
        if m.uid() != 0 && m.uid() != euid {
            return Err(Untrusted::ForeignLink {
                link: next,
                uid: m.uid(),
            });
        }
        links += 1;
        let (true, Ok(target)) = (links <= MAX_LINKS, fs::read_link(&next)) else {
            return Ok(());
        };
        if target.is_absolute() {
            at = PathBuf::from("/");
        }
        push_front(&mut todo, &target);
    }
    Ok(())
}

/// Puts `p`'s components in front of those still to resolve (`todo` is a stack).
fn push_front(todo: &mut Vec<OsString>, p: &Path) {
    for c in p.components().rev() {
        match c {
            Component::Normal(n) => todo.push(n.to_owned()),
            Component::ParentDir => todo.push("..".into()),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn foreign_links_are_refused_and_ours_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        fs::create_dir(t.join("real")).unwrap();
        fs::write(t.join("real/f"), b"x").unwrap();
        symlink("real", t.join("ours")).unwrap();
        symlink(t.join("ours"), t.join("abs")).unwrap();
        let me = rustix::process::geteuid().as_raw();
        assert!(check(&t.join("ours/f"), me).is_ok());
        assert!(check(&t.join("abs/f"), me).is_ok());
        assert!(check(&t.join("ours/../real/missing/deeper"), me).is_ok());
        if me == 0 {
            rustix::fs::chownat(
                rustix::fs::CWD,
                t.join("ours"),
                Some(rustix::fs::Uid::from_raw(4321)),
                None,
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .unwrap();
            let e = check(&t.join("abs/f"), me).unwrap_err().to_string();
            assert!(e.contains("ours: symlink owned by uid 4321"), "{e}");
            assert!(check(&t.join("real/f"), me).is_ok());
        }
    }
}
