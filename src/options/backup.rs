//! `-b/--backup`, decided without I/O: the backup's name and place, and the names
//! `--delete` must leave alone.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// `-b/--backup`: what replaced and deleted entries become.
#[derive(Clone, Debug)]
pub struct Backup {
    /// `--suffix` (rsync's default `~`, or nothing with `--backup-dir`).
    pub suffix: OsString,
    /// `--backup-dir`: relative to DEST, or absolute (on `nfs://`, a path on the
    /// server). The backup keeps the entry's path below it.
    pub dir: Option<PathBuf>,
    /// `--info=backup` (or `-vv`): each backup is named as it is made, as rsync does.
    pub announce: bool,
}

impl Backup {
    /// The backup's name for `name`.
    pub fn name(&self, name: &OsStr) -> OsString {
        let mut b = name.to_os_string();
        b.push(&self.suffix);
        b
    }

    /// Whether a deleted `name` is itself a backup beside its file (it ends in the
    /// suffix, with no `--backup-dir`): it is removed, not backed up again as `name~~`,
    /// as rsync does.
    pub fn is_backup_name(&self, name: &OsStr) -> bool {
        self.dir.is_none()
            && !self.suffix.is_empty()
            && name.len() > self.suffix.len()
            && name.as_bytes().ends_with(self.suffix.as_bytes())
    }

    /// Where the backup of an entry in DEST's `parent` (relative to DEST) goes, as a
    /// path for [`crate::dest::Destination::open_path`]; `None`: beside the entry.
    pub fn dir_for(&self, parent: &Path) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(parent))
    }

    /// How rsync names the backup of `rel` (relative to DEST) in its `backed up`
    /// line: beside it, or `--backup-dir` as given (less leading `./`) ending in `/`,
    /// then `rel`, plus the suffix.
    pub fn shown(&self, rel: &Path) -> PathBuf {
        let mut out = OsString::new();
        if let Some(d) = self.given_dir() {
            out.push(OsStr::from_bytes(d));
            if !d.ends_with(b"/") {
                out.push("/");
            }
        }
        out.push(rel);
        out.push(&self.suffix);
        out.into()
    }

    /// `--backup-dir` as rsync shows it in `backup_dir is DIR`: less leading `./` and
    /// one trailing `/`.
    pub fn shown_dir(&self) -> Option<PathBuf> {
        let d = self.given_dir()?;
        let d = match d {
            [rest @ .., b'/'] if !rest.is_empty() => rest,
            d => d,
        };
        Some(OsStr::from_bytes(d).into())
    }

    /// `--backup-dir` less the leading `./` rsync drops.
    fn given_dir(&self) -> Option<&[u8]> {
        let mut d = self.dir.as_ref()?.as_os_str().as_bytes();
        while let Some(rest) = d.strip_prefix(b"./") {
            d = rest;
        }
        Some(d)
    }

    /// Whether `--delete` must leave `rel` (relative to DEST) alone, as rsync's own
    /// protect rules do: backups beside their files (`P *~`), and a backup directory
    /// inside DEST.
    pub fn protects(&self, rel: &Path) -> bool {
        match &self.dir {
            None => {
                !self.suffix.is_empty()
                    && rel
                        .file_name()
                        .is_some_and(|n| n.as_bytes().ends_with(self.suffix.as_bytes()))
            }
            Some(d) => d.is_relative() && normalize(d).as_deref() == Some(rel),
        }
    }
}

/// `a/./b/../c` as `a/c`; `None` when it climbs above its start.
pub fn normalize(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backups_and_their_protection() {
        let b = Backup {
            suffix: "~".into(),
            dir: None,
            announce: false,
        };
        assert_eq!(b.name(OsStr::new("a")), "a~");
        assert!(b.protects(Path::new("x/a~")));
        assert!(!b.protects(Path::new("x/a")));
        assert_eq!(b.dir_for(Path::new("x")), None);
        assert!(b.is_backup_name(OsStr::new("a~")));
        assert!(!b.is_backup_name(OsStr::new("~")));
        assert!(!b.is_backup_name(OsStr::new("a")));
        let d = Backup {
            suffix: "".into(),
            dir: Some("./bk/../old".into()),
            announce: false,
        };
        assert!(d.protects(Path::new("old")));
        assert!(!d.protects(Path::new("a~")));
        assert!(!d.is_backup_name(OsStr::new("a~")));
        assert_eq!(d.dir_for(Path::new("x")), Some("./bk/../old/x".into()));
    }

    #[test]
    fn backups_named_as_rsync_names_them() {
        let beside = Backup {
            suffix: "~".into(),
            dir: None,
            announce: true,
        };
        assert_eq!(beside.shown(Path::new("d/a")).as_os_str(), "d/a~");
        assert_eq!(beside.shown_dir(), None);
        for (given, dir, shown) in [
            ("/bk", "/bk", "/bk/d/a"),
            ("./././bk/", "bk", "bk/d/a"),
            ("../bk//", "../bk/", "../bk//d/a"),
            ("/", "/", "/d/a"),
        ] {
            let b = Backup {
                suffix: "".into(),
                dir: Some(given.into()),
                announce: true,
            };
            assert_eq!(b.shown_dir().unwrap().as_os_str(), dir, "{given}");
            assert_eq!(b.shown(Path::new("d/a")).as_os_str(), shown, "{given}");
        }
    }

    #[test]
    fn normalize_stays_below_its_start() {
        assert_eq!(normalize(Path::new("a/./b/../c")), Some("a/c".into()));
        assert_eq!(normalize(Path::new("../a")), None);
    }
}
